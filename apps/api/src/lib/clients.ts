// Which client sent a request (Zulip's get_client_name / parse_user_agent): the `client`
// parameter, else the product name of the User-Agent. It is shown as a message's `client` and
// decides whether the sender has read their own message.
import type { Request } from 'express';

const MAX_CLIENT_NAME = 30;

export function clientName(req: Request, clientParam: string | undefined): string {
  if (clientParam) return clientParam.slice(0, MAX_CLIENT_NAME);
  const agent = req.get('user-agent') ?? '';
  // "ZulipMobile/27.190 (Android 9)" → "ZulipMobile"; "node-fetch" → "node-fetch".
  const name = /^([^/ ]*[^0-9/( ]*)/.exec(agent)?.[1]?.trim() ?? '';
  return (name || 'API').slice(0, MAX_CLIENT_NAME);
}

/** Zulip's Message.sent_by_human: messages from interactive apps are read by their sender;
 * those from scripts and API libraries are not. */
export function sentByHuman(client: string): boolean {
  const name = client.toLowerCase();
  return (
    [
      'zulipandroid',
      'zulipios',
      'zulipdesktop',
      'zulipmobile',
      'zulipelectron',
      'zulipterminal',
      'snipe',
      'website',
      'ios',
      'android',
    ].includes(name) ||
    name.includes('desktop app') ||
    name.startsWith('zulipflutter')
  );
}
