-- Zulip's RealmExport: every data export an administrator asked for (POST /export/realm), its
-- type (1 public, 2 full with member consent) and status (1 requested, 2 started, 3 succeeded,
-- 4 failed, 5 deleted), and where its tarball is stored once it succeeded.
CREATE TABLE "realm_export" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "type" SMALLINT NOT NULL DEFAULT 1,
    "status" SMALLINT NOT NULL DEFAULT 1,
    "date_requested" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "date_started" TIMESTAMPTZ(6),
    "date_succeeded" TIMESTAMPTZ(6),
    "date_failed" TIMESTAMPTZ(6),
    "date_deleted" TIMESTAMPTZ(6),
    "acting_user_id" INTEGER,
    "export_path" TEXT,
    "sha256sum_hex" VARCHAR(64),
    "tarball_size_bytes" BIGINT,
    "stats" JSONB,

    CONSTRAINT "realm_export_pkey" PRIMARY KEY ("id")
);

-- The week's count that rate-limits requests, and the organization's list.
CREATE INDEX "realm_export_realm_id_date_requested_idx" ON "realm_export"("realm_id", "date_requested");

ALTER TABLE "realm_export" ADD CONSTRAINT "realm_export_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE CASCADE ON UPDATE CASCADE;

ALTER TABLE "realm_export" ADD CONSTRAINT "realm_export_acting_user_id_fkey" FOREIGN KEY ("acting_user_id") REFERENCES "user_profile"("id") ON DELETE SET NULL ON UPDATE CASCADE;
