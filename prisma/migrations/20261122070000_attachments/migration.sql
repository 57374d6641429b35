-- CreateTable
CREATE TABLE "attachment" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "owner_id" INTEGER NOT NULL,
    "file_name" TEXT NOT NULL,
    "path_id" TEXT NOT NULL,
    "size" INTEGER NOT NULL,
    "content_type" TEXT,
    "create_time" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "width" INTEGER,
    "height" INTEGER,

    CONSTRAINT "attachment_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "attachment_messages" (
    "attachment_id" INTEGER NOT NULL,
    "message_id" INTEGER NOT NULL,

    CONSTRAINT "attachment_messages_pkey" PRIMARY KEY ("attachment_id","message_id")
);

-- CreateIndex
CREATE UNIQUE INDEX "attachment_path_id_key" ON "attachment"("path_id");

-- CreateIndex
CREATE INDEX "attachment_owner_id_idx" ON "attachment"("owner_id");

-- CreateIndex
CREATE INDEX "attachment_realm_id_idx" ON "attachment"("realm_id");

-- CreateIndex
CREATE INDEX "attachment_messages_message_id_idx" ON "attachment_messages"("message_id");

-- AddForeignKey
ALTER TABLE "attachment" ADD CONSTRAINT "attachment_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "attachment" ADD CONSTRAINT "attachment_owner_id_fkey" FOREIGN KEY ("owner_id") REFERENCES "user_profile"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "attachment_messages" ADD CONSTRAINT "attachment_messages_attachment_id_fkey" FOREIGN KEY ("attachment_id") REFERENCES "attachment"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "attachment_messages" ADD CONSTRAINT "attachment_messages_message_id_fkey" FOREIGN KEY ("message_id") REFERENCES "message"("id") ON DELETE CASCADE ON UPDATE CASCADE;

