-- Submessages (Zulip's SubMessage): data attached to a message after it was sent, which clients
-- fold into a widget. A /poll or /todo message gets its first one (msg_type "widget") from the
-- server when sent, and votes, new options and tasks follow through POST /submessage. They go with
-- their message.
CREATE TABLE submessage (
  id              SERIAL PRIMARY KEY,
  message_id      INTEGER NOT NULL REFERENCES message(id) ON DELETE CASCADE,
  sender_id       INTEGER NOT NULL REFERENCES user_profile(id) ON DELETE CASCADE,
  msg_type        TEXT NOT NULL,
  content         TEXT NOT NULL
);
CREATE INDEX submessage_message_id_idx ON submessage (message_id);
