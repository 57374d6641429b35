-- The ChannelEmailAddress of Zulip: the tokens of the addresses that post to a channel by
-- email. One per channel, creator (the user who asked for the address) and sender (who the
-- messages come from: the Email Gateway bot, the creator, or a bot of theirs). The token is
-- what an address carries, so it is unique across the server.
CREATE TABLE "channel_email_address" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "channel_id" INTEGER NOT NULL,
    "creator_id" INTEGER,
    "sender_id" INTEGER NOT NULL,
    "email_token" VARCHAR(32) NOT NULL,
    "date_created" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "deactivated" BOOLEAN NOT NULL DEFAULT false,

    CONSTRAINT "channel_email_address_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "channel_email_address_email_token_key" ON "channel_email_address"("email_token");

CREATE UNIQUE INDEX "channel_email_address_channel_id_creator_id_sender_id_key" ON "channel_email_address"("channel_id", "creator_id", "sender_id");

CREATE INDEX "channel_email_address_realm_id_channel_id_idx" ON "channel_email_address"("realm_id", "channel_id");

ALTER TABLE "channel_email_address" ADD CONSTRAINT "channel_email_address_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE CASCADE ON UPDATE CASCADE;

ALTER TABLE "channel_email_address" ADD CONSTRAINT "channel_email_address_channel_id_fkey" FOREIGN KEY ("channel_id") REFERENCES "stream"("id") ON DELETE CASCADE ON UPDATE CASCADE;

ALTER TABLE "channel_email_address" ADD CONSTRAINT "channel_email_address_creator_id_fkey" FOREIGN KEY ("creator_id") REFERENCES "user_profile"("id") ON DELETE CASCADE ON UPDATE CASCADE;

ALTER TABLE "channel_email_address" ADD CONSTRAINT "channel_email_address_sender_id_fkey" FOREIGN KEY ("sender_id") REFERENCES "user_profile"("id") ON DELETE CASCADE ON UPDATE CASCADE;
