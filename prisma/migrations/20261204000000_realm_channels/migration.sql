-- The organization's special channels (Zulip's Realm.new_stream_announcements_stream,
-- signup_announcements_stream, zulip_update_announcements_stream and
-- moderation_request_channel): where the Notification Bot announces new channels and new
-- members, and where reported messages go. NULL: none (the API's -1). Archiving a channel
-- clears them (actions/streams.ts), and so does deleting one.
ALTER TABLE "realm"
    ADD COLUMN "new_stream_announcements_stream_id" INTEGER,
    ADD COLUMN "signup_announcements_stream_id" INTEGER,
    ADD COLUMN "zulip_update_announcements_stream_id" INTEGER,
    ADD COLUMN "moderation_request_channel_id" INTEGER;

ALTER TABLE "realm" ADD CONSTRAINT "realm_new_stream_announcements_stream_id_fkey" FOREIGN KEY ("new_stream_announcements_stream_id") REFERENCES "stream"("id") ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE "realm" ADD CONSTRAINT "realm_signup_announcements_stream_id_fkey" FOREIGN KEY ("signup_announcements_stream_id") REFERENCES "stream"("id") ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE "realm" ADD CONSTRAINT "realm_zulip_update_announcements_stream_id_fkey" FOREIGN KEY ("zulip_update_announcements_stream_id") REFERENCES "stream"("id") ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE "realm" ADD CONSTRAINT "realm_moderation_request_channel_id_fkey" FOREIGN KEY ("moderation_request_channel_id") REFERENCES "stream"("id") ON DELETE SET NULL ON UPDATE CASCADE;
