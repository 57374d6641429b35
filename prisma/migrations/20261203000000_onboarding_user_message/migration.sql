-- Zulip's OnboardingUserMessage: the Welcome Bot's initial messages in a new organization,
-- with the flags (historical, and starred for the first message of each topic) that each
-- person who joins later gets on their copy (lib/new-user-history.ts).
CREATE TABLE "onboarding_user_message" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "message_id" INTEGER NOT NULL,
    "flags" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "onboarding_user_message_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "onboarding_user_message_realm_id_message_id_key" ON "onboarding_user_message"("realm_id", "message_id");

ALTER TABLE "onboarding_user_message" ADD CONSTRAINT "onboarding_user_message_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE CASCADE ON UPDATE CASCADE;

ALTER TABLE "onboarding_user_message" ADD CONSTRAINT "onboarding_user_message_message_id_fkey" FOREIGN KEY ("message_id") REFERENCES "message"("id") ON DELETE CASCADE ON UPDATE CASCADE;
