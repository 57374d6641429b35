// Outgoing email through nodemailer. EMAIL_BACKEND chooses the transport: `log` (one log line
// per message; bodies, which may hold confirmation links, are left out), `directory` (one
// .eml file per message in EMAIL_DIR, for development and tests) or `smtp` (SMTP_URL).
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import nodemailer, { type Transporter } from 'nodemailer';
import { getConfig } from '@parley/config';
import { getLogger } from '@parley/logger';

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  html?: string;
  /** Sender's display name (the address is NOREPLY_EMAIL_ADDRESS). */
  fromName?: string;
  /** Where replies go (Reply-To), with its display name. */
  replyTo?: { name: string; address: string };
  /** Extra headers (Date, …). */
  headers?: Record<string, string>;
}

let smtp: { url: string; transport: Transporter } | undefined;

/** The server's own addresses default to its host, without a port. */
const defaultAddress = (local: string) =>
  `${local}@${getConfig().EXTERNAL_HOST.replace(/:\d+$/, '')}`;

export function noreplyAddress(): string {
  return getConfig().NOREPLY_EMAIL_ADDRESS ?? defaultAddress('noreply');
}

/** The server administrator's address (Zulip's FromAddress.SUPPORT). */
export function supportAddress(): string {
  return getConfig().ZULIP_ADMINISTRATOR ?? defaultAddress('zulip-admin');
}

function envelope(message: MailMessage) {
  const address = noreplyAddress();
  return {
    from: message.fromName ? { name: message.fromName, address } : address,
    to: message.to,
    subject: message.subject,
    text: message.text,
    html: message.html,
    ...(message.replyTo ? { replyTo: message.replyTo } : {}),
    headers: message.headers,
  };
}

/** Sends one message; resolves once the transport accepted it. */
export async function sendMail(message: MailMessage): Promise<void> {
  const config = getConfig();
  switch (config.EMAIL_BACKEND) {
    case 'log':
      getLogger().info('email (EMAIL_BACKEND=log: not delivered)', {
        to: message.to,
        subject: message.subject,
      });
      return;
    case 'directory': {
      const transport = nodemailer.createTransport({ streamTransport: true, buffer: true });
      const info = await transport.sendMail(envelope(message));
      const dir = resolve(config.EMAIL_DIR);
      await mkdir(dir, { recursive: true });
      const file = join(dir, `${Date.now()}-${randomBytes(4).toString('hex')}.eml`);
      await writeFile(file, info.message as Buffer);
      getLogger().info('email written', { to: message.to, subject: message.subject, file });
      return;
    }
    case 'smtp': {
      const url = config.SMTP_URL!;
      if (!smtp || smtp.url !== url) smtp = { url, transport: nodemailer.createTransport(url) };
      await smtp.transport.sendMail(envelope(message));
      getLogger().info('email sent', { to: message.to, subject: message.subject });
      return;
    }
  }
}

export function closeMail(): void {
  smtp?.transport.close();
  smtp = undefined;
}
