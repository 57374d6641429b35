-- CreateTable
CREATE TABLE "realm_emoji" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "author_id" INTEGER,
    "name" VARCHAR(60) NOT NULL,
    "file_name" TEXT,
    "is_animated" BOOLEAN NOT NULL DEFAULT false,
    "deactivated" BOOLEAN NOT NULL DEFAULT false,

    CONSTRAINT "realm_emoji_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "realm_emoji_realm_id_name_idx" ON "realm_emoji"("realm_id", "name");

-- AddForeignKey
ALTER TABLE "realm_emoji" ADD CONSTRAINT "realm_emoji_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "realm_emoji" ADD CONSTRAINT "realm_emoji_author_id_fkey" FOREIGN KEY ("author_id") REFERENCES "user_profile"("id") ON DELETE SET NULL ON UPDATE CASCADE;


-- An active name is unique in its organization, deactivated emoji keep theirs.
CREATE UNIQUE INDEX "realm_emoji_active_name_key" ON "realm_emoji"("realm_id", "name") WHERE NOT "deactivated";
