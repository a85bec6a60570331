-- Incoming messages whose delivery the relay has not yet confirmed (its
-- `delivery_acknowledged` event), kept apart from their status: a message read on
-- this device before the confirmation came is still acknowledged again after a
-- reconnect, so it leaves the relay. A row outlives its message (eviction may delete
-- one before the relay confirmed it, and the relay must still be told).
CREATE TABLE PendingDeliveryAcks (message_id INTEGER PRIMARY KEY);

INSERT INTO PendingDeliveryAcks (message_id)
  SELECT id FROM Messages WHERE status = 'SYNCED' AND from_user_id = conversation_id;

-- Failed sends of a request that reached the relay (5xx, 429, no answer after it was
-- sent), apart from `fail_count`, which also counts attempts while the relay could not
-- be reached at all: only these count toward the retry limit, so a device offline for a
-- while does not fail its messages for good.
ALTER TABLE MessageRequests ADD COLUMN failed_answers INTEGER NOT NULL DEFAULT 0;
