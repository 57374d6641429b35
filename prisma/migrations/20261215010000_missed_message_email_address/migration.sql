-- The reply-to address of a missed-message email (Zulip's MissedMessageEmailAddress), when
-- the server has an email gateway: a reply posts to the conversation of the message, as the
-- user the email was for. The token (mm and 32 hexadecimal digits) is what the address
-- carries.
CREATE TABLE "missed_message_email_address" (
    "id" SERIAL NOT NULL,
    "message_id" INTEGER NOT NULL,
    "user_profile_id" INTEGER NOT NULL,
    "email_token" VARCHAR(34) NOT NULL,
    "timestamp" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "times_used" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "missed_message_email_address_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "missed_message_email_address_email_token_key" ON "missed_message_email_address"("email_token");

CREATE INDEX "missed_message_email_address_message_id_idx" ON "missed_message_email_address"("message_id");

CREATE INDEX "missed_message_email_address_user_profile_id_idx" ON "missed_message_email_address"("user_profile_id");

ALTER TABLE "missed_message_email_address" ADD CONSTRAINT "missed_message_email_address_message_id_fkey" FOREIGN KEY ("message_id") REFERENCES "message"("id") ON DELETE CASCADE ON UPDATE CASCADE;

ALTER TABLE "missed_message_email_address" ADD CONSTRAINT "missed_message_email_address_user_profile_id_fkey" FOREIGN KEY ("user_profile_id") REFERENCES "user_profile"("id") ON DELETE CASCADE ON UPDATE CASCADE;
