#include <sqlite3.h>

// sqlite3_db_config is variadic, which Swift cannot call: one wrapper per option used.

/// Turns this connection's triggers on (1) or off (0), or only reads the setting (-1);
/// `*enabled` receives the setting after the call.
/// See <https://sqlite.org/c3ref/c_dbconfig_defensive.html#sqlitedbconfigenabletrigger>.
static inline int chatdb_sqlite3_enable_triggers(sqlite3 *db, int enable, int *enabled) {
  return sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, enable, enabled);
}

/// Closing this connection will not checkpoint the WAL (nor remove it): a connection that
/// found someone else's WAL and wrote nothing leaves it as it was.
/// See <https://sqlite.org/c3ref/c_dbconfig_defensive.html#sqlitedbconfignockptonclose>.
static inline int chatdb_sqlite3_no_checkpoint_on_close(sqlite3 *db) {
  return sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)0);
}
