-- CreateTable
CREATE TABLE "realm_filter" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "pattern" TEXT NOT NULL,
    "url_template" TEXT NOT NULL,
    "order" INTEGER NOT NULL DEFAULT 0,
    "example_input" TEXT,
    "reverse_template" TEXT,
    "alternative_url_templates" TEXT[] DEFAULT ARRAY[]::TEXT[],

    CONSTRAINT "realm_filter_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "realm_filter_realm_id_pattern_key" ON "realm_filter"("realm_id", "pattern");

-- AddForeignKey
ALTER TABLE "realm_filter" ADD CONSTRAINT "realm_filter_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

