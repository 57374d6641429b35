-- Scheduled messages and reminders (Zulip ScheduledMessage, feature levels 173 to 415).

-- One message to send later. delivery_type is 1 for a message the user scheduled (send later)
-- and 2 for a reminder, which the Notification Bot sends to the user about another message.
-- type is stream or private, stream_id the channel of a channel message, to_ids the users of
-- a direct message as the client named them. version grows with every edit: the delivery job
-- carries the version it was queued for and does nothing when the row has moved on.
-- delivered and delivered_message_id are set in the transaction that sends the message, on
-- the row locked first, so that a message is sent once however many jobs run for it.
CREATE TABLE scheduled_message (
  id                         SERIAL PRIMARY KEY,
  realm_id                   INTEGER NOT NULL REFERENCES realm(id),
  sender_id                  INTEGER NOT NULL REFERENCES user_profile(id),
  delivery_type              SMALLINT NOT NULL DEFAULT 1,
  type                       VARCHAR(7) NOT NULL,
  stream_id                  INTEGER REFERENCES stream(id),
  to_ids                     INTEGER[] NOT NULL DEFAULT ARRAY[]::INTEGER[],
  subject                    TEXT NOT NULL DEFAULT '',
  content                    TEXT NOT NULL,
  rendered_content           TEXT NOT NULL,
  scheduled_timestamp        TIMESTAMPTZ(6) NOT NULL,
  read_by_sender             BOOLEAN NOT NULL DEFAULT false,
  sending_client             VARCHAR(30) NOT NULL DEFAULT 'API',
  delivered                  BOOLEAN NOT NULL DEFAULT false,
  delivered_message_id       INTEGER REFERENCES message(id) ON DELETE SET NULL,
  failed                     BOOLEAN NOT NULL DEFAULT false,
  failure_message            TEXT,
  reminder_target_message_id INTEGER,
  reminder_note              TEXT,
  version                    INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX scheduled_message_sender_id_idx
  ON scheduled_message (sender_id, delivery_type, scheduled_timestamp)
  WHERE NOT delivered;
CREATE INDEX scheduled_message_pending_idx
  ON scheduled_message (scheduled_timestamp)
  WHERE NOT delivered AND NOT failed;
