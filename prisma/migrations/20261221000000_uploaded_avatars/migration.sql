-- Uploaded avatars (avatar_source 'U', Zulip's AVATAR_FROM_USER): the random name of the
-- current upload's files under user_avatars/{realm_id}/, so their addresses cannot be guessed
-- from user ids (Zulip hashes them with a salt). Null for avatars from Gravatar.
ALTER TABLE user_profile ADD COLUMN avatar_hash VARCHAR(40);
