-- The DefaultStreamGroup of Zulip (default channel groups): named sets of channels an
-- organization offers together. Names are unique per organization, as Zulip has them
-- (case-sensitive). A group's channels go with the group, and a channel leaves its groups
-- when it is archived (the action does that, announcing it).
CREATE TABLE "default_stream_group" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "name" VARCHAR(60) NOT NULL,
    "description" VARCHAR(1024) NOT NULL DEFAULT '',

    CONSTRAINT "default_stream_group_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "default_stream_group_realm_id_name_key" ON "default_stream_group"("realm_id", "name");

ALTER TABLE "default_stream_group" ADD CONSTRAINT "default_stream_group_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE CASCADE ON UPDATE CASCADE;

CREATE TABLE "default_stream_group_streams" (
    "defaultstreamgroup_id" INTEGER NOT NULL,
    "stream_id" INTEGER NOT NULL,

    CONSTRAINT "default_stream_group_streams_pkey" PRIMARY KEY ("defaultstreamgroup_id","stream_id")
);

CREATE INDEX "default_stream_group_streams_stream_id_idx" ON "default_stream_group_streams"("stream_id");

ALTER TABLE "default_stream_group_streams" ADD CONSTRAINT "default_stream_group_streams_group_fkey" FOREIGN KEY ("defaultstreamgroup_id") REFERENCES "default_stream_group"("id") ON DELETE CASCADE ON UPDATE CASCADE;

ALTER TABLE "default_stream_group_streams" ADD CONSTRAINT "default_stream_group_streams_stream_fkey" FOREIGN KEY ("stream_id") REFERENCES "stream"("id") ON DELETE CASCADE ON UPDATE CASCADE;
