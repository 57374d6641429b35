-- Drafts synchronized between a user's clients (Zulip Draft) and saved snippets (Zulip
-- SavedSnippet, feature level 297).

-- A draft. type is the empty string for an unaddressed draft, stream or private otherwise.
-- to_ids holds the channel id for a channel draft, the other users for a direct draft (the
-- user alone for a draft to oneself), and nothing for an unaddressed one.
-- last_edit_time is the client-sent or server-filled time of the last edit.
CREATE TABLE draft (
  id              SERIAL PRIMARY KEY,
  user_profile_id INTEGER NOT NULL REFERENCES user_profile(id),
  type            VARCHAR(7) NOT NULL,
  to_ids          INTEGER[] NOT NULL,
  topic           TEXT NOT NULL,
  content         TEXT NOT NULL,
  last_edit_time  TIMESTAMPTZ(6) NOT NULL
);
CREATE INDEX draft_user_profile_id_last_edit_time_idx ON draft (user_profile_id, last_edit_time);

-- A saved snippet: a titled piece of message text a user reuses.
CREATE TABLE saved_snippet (
  id              SERIAL PRIMARY KEY,
  realm_id        INTEGER NOT NULL REFERENCES realm(id),
  user_profile_id INTEGER NOT NULL REFERENCES user_profile(id),
  title           TEXT NOT NULL,
  content         TEXT NOT NULL,
  date_created    TIMESTAMPTZ(6) NOT NULL DEFAULT now()
);
CREATE INDEX saved_snippet_user_profile_id_idx ON saved_snippet (user_profile_id);
CREATE INDEX saved_snippet_realm_id_idx ON saved_snippet (realm_id);
