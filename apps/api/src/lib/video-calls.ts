// Which video call providers this server offers (Zulip's Realm.VIDEO_CHAT_PROVIDERS and
// get_enabled_video_chat_providers: a provider is offered only when the server is configured
// for it, docs/video-calls.md), Jitsi Meet links, and the organization a Zoom OAuth state
// names.
import { randomInt } from 'node:crypto';
import { getConfig } from '@parley/config';
import { getPrisma, type Realm } from '@parley/db';
import { bigBlueButtonConfigured } from './bigbluebutton';
import { invalidZoomSession, zoomMode, type ZoomState } from './zoom';

/** Zulip's provider keys, names and ids (id 2 was Google Hangouts, removed). Both Zoom
 * integrations are called "Zoom": a server has one of them at most. */
export const VIDEO_CHAT_PROVIDERS = {
  disabled: { name: 'None', id: 0 },
  jitsi_meet: { name: 'Jitsi Meet', id: 1 },
  zoom: { name: 'Zoom', id: 3 },
  big_blue_button: { name: 'BigBlueButton', id: 4 },
  zoom_server_to_server: { name: 'Zoom', id: 5 },
} as const;

export type VideoChatProviderKey = keyof typeof VIDEO_CHAT_PROVIDERS;

/** realm_available_video_chat_providers: the providers the server is configured for. */
export function availableVideoChatProviders(): Partial<
  Record<VideoChatProviderKey, { name: string; id: number }>
> {
  const zoom = zoomMode();
  const enabled: Record<VideoChatProviderKey, boolean> = {
    disabled: true,
    jitsi_meet: true,
    zoom: zoom === 'user',
    big_blue_button: bigBlueButtonConfigured(),
    zoom_server_to_server: zoom === 'server',
  };
  return Object.fromEntries(
    Object.entries(VIDEO_CHAT_PROVIDERS).filter(([key]) => enabled[key as VideoChatProviderKey]),
  );
}

export function availableVideoChatProviderIds(): number[] {
  return Object.values(availableVideoChatProviders()).map((provider) => provider.id);
}

/** The Jitsi Meet server of an organization: its own, or the server's. */
export function jitsiServerUrl(realm: Pick<Realm, 'jitsiServerUrl'>): string {
  return realm.jitsiServerUrl ?? getConfig().JITSI_SERVER_URL;
}

/** A new Jitsi Meet room, built as Zulip's web app builds one (compose_call_ui.ts): a random
 * 15-digit room on the organization's server; an audio call starts with video muted. Jitsi
 * creates rooms when someone first opens them, so the server needs no API call. */
export function jitsiCallUrl(realm: Pick<Realm, 'jitsiServerUrl'>, isVideoCall: boolean): string {
  const base = jitsiServerUrl(realm);
  // randomInt spans at most 2^48 values: the leading digit and the other 14 separately.
  const room = `${randomInt(1, 10)}${String(randomInt(0, 100_000_000_000_000)).padStart(14, '0')}`;
  const url = new URL(room, base.endsWith('/') ? base : `${base}/`).toString();
  return isVideoCall ? url : `${url}#config.startWithVideoMuted=true`;
}

/** The organization a Zoom OAuth state names, if it is active: the flow completes on its
 * host (Zulip's complete_zoom_user redirects there), where its users' credentials work. */
export async function getZoomStateRealm(state: ZoomState): Promise<Realm> {
  const realm = await getPrisma().realm.findFirst({
    where: { stringId: state.realm, deactivated: false },
  });
  if (!realm) throw invalidZoomSession();
  return realm;
}
