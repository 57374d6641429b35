// The notification contract between the tiers: what the API tier publishes after a commit and
// the events tier turns into per-queue events. Event payloads follow Zulip's (spec 6); the id is
// assigned per queue by the events tier.

export interface ZulipEvent {
  type: string;
  op?: string;
  [field: string]: unknown;
}

export interface Notification {
  event: ZulipEvent;
  /** Recipients by user id. */
  users: number[];
}
