-- Emoji reactions on messages (spec 2.9).

-- CreateTable
CREATE TABLE "reaction" (
    "id" SERIAL NOT NULL,
    "message_id" INTEGER NOT NULL,
    "user_profile_id" INTEGER NOT NULL,
    "emoji_name" VARCHAR(100) NOT NULL,
    "emoji_code" VARCHAR(100) NOT NULL,
    "reaction_type" VARCHAR(30) NOT NULL DEFAULT 'unicode_emoji',

    CONSTRAINT "reaction_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "reaction_message_id_idx" ON "reaction"("message_id");

-- CreateIndex
CREATE UNIQUE INDEX "reaction_user_profile_id_message_id_reaction_type_emoji_cod_key" ON "reaction"("user_profile_id", "message_id", "reaction_type", "emoji_code");

-- AddForeignKey
ALTER TABLE "reaction" ADD CONSTRAINT "reaction_message_id_fkey" FOREIGN KEY ("message_id") REFERENCES "message"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "reaction" ADD CONSTRAINT "reaction_user_profile_id_fkey" FOREIGN KEY ("user_profile_id") REFERENCES "user_profile"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

