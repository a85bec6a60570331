-- Recomputes every conversation summary (ConversationSummaries, migration 0004), as the
-- migration's backfill does: what a peer that wrote with its connection's triggers off
-- (as chatdb's bulk jobs do, `.dbconfig enable_trigger off` in the shell) owes the file
-- to end in the same state as chatdb. Run with triggers on: deleting the rows of
-- ConversationSummaryRefresh recomputes those conversations.
INSERT INTO ConversationSummaryRefresh (conversation_id)
SELECT conversation_id FROM Messages
UNION SELECT to_user_id FROM MessageRequests WHERE status IN ('PENDING', 'SENT', 'FAILED')
UNION SELECT conversation_id FROM ConversationSummaries;
DELETE FROM ConversationSummaryRefresh;
