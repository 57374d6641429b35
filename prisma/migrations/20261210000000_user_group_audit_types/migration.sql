-- Group deactivation and reactivation were recorded as 709 and 710, numbers Zulip reserves
-- for membership changes. Zulip records them as 723 and 724.
UPDATE "realm_audit_log" SET "event_type" = 723 WHERE "event_type" = 709;
UPDATE "realm_audit_log" SET "event_type" = 724 WHERE "event_type" = 710;
