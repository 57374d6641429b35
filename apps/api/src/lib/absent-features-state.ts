// The /register sections of features Parley does not have yet. Each returns what Zulip returns
// for an organization or user that has none of the data (no drafts, no domains, no
// integrations configured), so clients see an empty feature rather than a missing key. When a
// feature arrives, its section moves to a real read (docs/register.md keeps the list).
type State = Record<string, unknown>;

export const ABSENT_FEATURE_SECTIONS: Record<string, () => State> = {
  // Zulip always sends [] here: the legacy linkifier format cannot express URL templates.
  realm_filters: () => ({ realm_filters: [] }),
  // No embedded bots and no incoming-webhook integrations on this server.
  realm_embedded_bots: () => ({ realm_embedded_bots: [] }),
  realm_incoming_webhook_bots: () => ({ realm_incoming_webhook_bots: [] }),
  // No billing: nothing can be pending.
  realm_billing: () => ({ realm_billing: { has_pending_sponsorship_request: false } }),
  // No GIF integrations: Zulip sends "" when the server has no key.
  giphy: () => ({ giphy_api_key: '' }),
  tenor: () => ({ tenor_api_key: '' }),
  // No onboarding steps; null turns the navigation tour video off.
  onboarding_steps: () => ({ onboarding_steps: [], navigation_tour_video_url: null }),
  // Feature level 406's map of E2EE registrations, which level 468 replaced with `devices`
  // (lib/client-devices.ts): clients of those levels see none.
  push_device: () => ({ push_devices: {} }),
};
