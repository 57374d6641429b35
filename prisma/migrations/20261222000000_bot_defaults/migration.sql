-- A bot's defaults, as Zulip keeps them on its user_profile: the channel it sends to by
-- default, the channel its queues follow when registered without a narrow, and whether they
-- follow every public channel. A channel going away clears them.
ALTER TABLE user_profile
  ADD COLUMN default_sending_stream_id INTEGER,
  ADD COLUMN default_events_register_stream_id INTEGER,
  ADD COLUMN default_all_public_streams BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE user_profile
  ADD CONSTRAINT user_profile_default_sending_stream_id_fkey
    FOREIGN KEY (default_sending_stream_id) REFERENCES stream(id) ON DELETE SET NULL ON UPDATE CASCADE,
  ADD CONSTRAINT user_profile_default_events_register_stream_id_fkey
    FOREIGN KEY (default_events_register_stream_id) REFERENCES stream(id) ON DELETE SET NULL ON UPDATE CASCADE;
