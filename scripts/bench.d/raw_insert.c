/* SQLite's own limit for the bench: inserts the rows of rows.bin (written by
 * prepare_rows.py) into a file made by `chatdb migrate` (the same schema, the same
 * indexes), with one prepared statement per table, WAL, synchronous=NORMAL and one
 * transaction per 10,000 rows. No parsing, no checks: only what SQLite must do.
 *
 *   raw_insert DB rows.bin [--foreign-keys] [--wal-autocheckpoint PAGES]
 *
 * By default foreign keys are off and the WAL is checkpointed every 1,000 pages
 * (SQLite's defaults); the options turn on what chatdb's own connection does.
 *
 * Like chatdb's import, it inserts with its connection's triggers off and then
 * computes the conversation summaries (migration 0004) set-wise, in one transaction
 * at the end (the SQL of scripts/bench.d/summaries.sql), so the file ends the same.
 *
 * rows.bin is a sequence of records, integers little-endian:
 *   'u' id:i64 name:str avatar_url:str last_connected_at:str
 *   'm' id:i64 from:i64 to:i64 conversation:i64 request:i64 (-1 = NULL) content:str status:str created_at:str
 * where str is len:i32 (-1 = NULL) then len bytes of UTF-8.
 */
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCH 10000

static sqlite3 *db;

static void die(const char *what) {
  fprintf(stderr, "raw_insert: %s: %s\n", what, db ? sqlite3_errmsg(db) : "?");
  exit(1);
}

static void exec(const char *sql) {
  char *err = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
    fprintf(stderr, "raw_insert: %s: %s\n", sql, err);
    exit(1);
  }
}

static const unsigned char *p, *end;

static int64_t i64(void) {
  int64_t v;
  memcpy(&v, p, 8);
  p += 8;
  return v;
}

/* Binds the next str at index i (no copy: the buffer outlives the statement's use). */
static void text(sqlite3_stmt *st, int i) {
  int32_t n;
  memcpy(&n, p, 4);
  p += 4;
  if (n < 0) {
    sqlite3_bind_null(st, i);
  } else {
    sqlite3_bind_text(st, i, (const char *)p, n, SQLITE_STATIC);
    p += n;
  }
}

int main(int argc, char **argv) {
  int foreign_keys = 0;
  const char *autocheckpoint = NULL;
  for (int i = 3; i < argc; i++) {
    if (strcmp(argv[i], "--foreign-keys") == 0) {
      foreign_keys = 1;
    } else if (strcmp(argv[i], "--wal-autocheckpoint") == 0 && i + 1 < argc) {
      autocheckpoint = argv[++i];
    } else {
      argc = 0;
    }
  }
  if (argc < 3) {
    fprintf(stderr, "usage: raw_insert DB rows.bin [--foreign-keys] [--wal-autocheckpoint PAGES]\n");
    return 64;
  }
  FILE *f = fopen(argv[2], "rb");
  if (!f) { perror(argv[2]); return 66; }
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *buf = malloc(size);
  if (!buf || fread(buf, 1, size, f) != (size_t)size) { perror(argv[2]); return 74; }
  fclose(f);
  p = buf;
  end = buf + size;

  if (sqlite3_open(argv[1], &db) != SQLITE_OK) die("open");
  exec("PRAGMA journal_mode = WAL");
  exec("PRAGMA synchronous = NORMAL");
  exec(foreign_keys ? "PRAGMA foreign_keys = ON" : "PRAGMA foreign_keys = OFF");
  if (sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, NULL) != SQLITE_OK) die("triggers off");
  if (autocheckpoint) {
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA wal_autocheckpoint = %d", atoi(autocheckpoint));
    exec(sql);
  }

  sqlite3_stmt *user, *message;
  if (sqlite3_prepare_v2(db,
        "INSERT INTO Users (id, name, avatar_url, last_connected_at) VALUES (?1, ?2, ?3, ?4)",
        -1, &user, NULL) != SQLITE_OK) die("prepare Users");
  if (sqlite3_prepare_v2(db,
        "INSERT INTO Messages (id, from_user_id, to_user_id, content, status, created_at, conversation_id, request_id)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        -1, &message, NULL) != SQLITE_OK) die("prepare Messages");

  long rows = 0;
  exec("BEGIN");
  while (p < end) {
    sqlite3_stmt *st;
    if (*p++ == 'u') {
      st = user;
      sqlite3_bind_int64(st, 1, i64());
      text(st, 2);
      text(st, 3);
      text(st, 4);
    } else {
      st = message;
      sqlite3_bind_int64(st, 1, i64());
      sqlite3_bind_int64(st, 2, i64());
      sqlite3_bind_int64(st, 3, i64());
      sqlite3_bind_int64(st, 7, i64());
      int64_t request = i64();
      if (request < 0) sqlite3_bind_null(st, 8); else sqlite3_bind_int64(st, 8, request);
      text(st, 4);
      text(st, 5);
      text(st, 6);
    }
    if (sqlite3_step(st) != SQLITE_DONE) die("insert");
    sqlite3_reset(st);
    if (++rows % BATCH == 0) {
      exec("COMMIT");
      exec("BEGIN");
    }
  }
  exec("COMMIT");
  if (sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 1, NULL) != SQLITE_OK) die("triggers on");
  exec("BEGIN");
  exec("INSERT INTO ConversationSummaryRefresh (conversation_id)"
       " SELECT conversation_id FROM Messages"
       " UNION SELECT to_user_id FROM MessageRequests WHERE status IN ('PENDING', 'SENT', 'FAILED')"
       " UNION SELECT conversation_id FROM ConversationSummaries");
  exec("DELETE FROM ConversationSummaryRefresh");
  exec("COMMIT");
  sqlite3_finalize(user);
  sqlite3_finalize(message);
  if (sqlite3_close(db) != SQLITE_OK) die("close");
  free(buf);
  printf("%ld rows\n", rows);
  return 0;
}
