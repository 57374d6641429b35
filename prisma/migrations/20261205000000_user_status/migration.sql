-- Zulip's UserStatus: the text and emoji a person shows beside their name (POST
-- /users/me/status). One row per user, created on the first change and kept. Its "away" is
-- not stored here but read from user_profile.presence_enabled, as Zulip does.
CREATE TABLE "user_status" (
    "user_profile_id" INTEGER NOT NULL,
    "timestamp" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    "status_text" VARCHAR(255) NOT NULL DEFAULT '',
    "emoji_name" TEXT NOT NULL DEFAULT '',
    "emoji_code" TEXT NOT NULL DEFAULT '',
    "reaction_type" VARCHAR(30) NOT NULL DEFAULT 'unicode_emoji',

    CONSTRAINT "user_status_pkey" PRIMARY KEY ("user_profile_id")
);

ALTER TABLE "user_status" ADD CONSTRAINT "user_status_user_profile_id_fkey" FOREIGN KEY ("user_profile_id") REFERENCES "user_profile"("id") ON DELETE CASCADE ON UPDATE CASCADE;
