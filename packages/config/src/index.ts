// Parley's configuration: the environment (plus an optional .env file) parsed once with zod.
// Every problem is reported at boot in one message, never one at a time.
import { existsSync } from 'node:fs';
import { z } from 'zod';

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const port = z.coerce.number().int().min(1).max(65535);

export const RATE_LIMIT_DOMAINS = [
  'api_by_user',
  'api_by_ip',
  'authenticate_by_username',
  'email_mirror_by_realm',
  'email_change_by_user',
] as const;
export type RateLimitDomain = (typeof RATE_LIMIT_DOMAINS)[number];
type RateLimitRules = Record<RateLimitDomain, [seconds: number, requests: number][]>;

/** Zulip's DEFAULT_RATE_LIMITING_RULES: (window in seconds, requests allowed in it). */
const DEFAULT_RATE_LIMITING_RULES: RateLimitRules = {
  api_by_user: [[60, 200]],
  api_by_ip: [[60, 100]],
  authenticate_by_username: [[1800, 5]],
  // Zulip's RATE_LIMITING_MIRROR_REALM_RULES: mail to an organization's channel addresses.
  email_mirror_by_realm: [
    [60, 50],
    [300, 120],
    [3600, 600],
  ],
  // Zulip's: confirmation mails a user may have sent to new addresses (PATCH /settings email).
  email_change_by_user: [
    [3600, 2],
    [86400, 5],
  ],
};

/** RATE_LIMITING_RULES is JSON in Zulip's shape, merged over the defaults by domain:
 * `{"api_by_user": [[60, 400], [3600, 10000]]}`; an empty list turns a domain's limit off. */
const rateLimitingRules = z
  .string()
  .transform((text, ctx) => {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      ctx.addIssue({ code: 'custom', message: 'must be JSON' });
      return z.NEVER;
    }
  })
  .pipe(
    z.partialRecord(
      z.enum(RATE_LIMIT_DOMAINS),
      z
        .array(z.tuple([z.number().int().min(1), z.number().int().min(1)]))
        // Each window is counted under its own key: two rules with one window would share it.
        .refine((rules) => new Set(rules.map(([seconds]) => seconds)).size === rules.length, {
          message: 'has two rules with the same window',
        }),
    ),
  )
  .default({})
  .transform((rules): RateLimitRules => ({
    ...DEFAULT_RATE_LIMITING_RULES,
    ...Object.fromEntries(
      Object.entries(rules).map(([domain, list]) => [
        domain,
        [...list].sort((a, b) => a[0] - b[0]),
      ]),
    ),
  }));

/** INVITES_NEW_REALM_LIMIT_DAYS is JSON like Zulip's setting: `[[days, invitations], …]`. */
const newRealmInviteLimits = z
  .string()
  .transform((text, ctx) => {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      ctx.addIssue({ code: 'custom', message: 'must be JSON' });
      return z.NEVER;
    }
  })
  .pipe(z.array(z.tuple([z.number().int().min(1).max(365), z.number().int().min(0)])))
  // Off unless set: Zulip applies it only where anyone may create an organization (a guard
  // against spam sign-ups); Parley's organizations are created by the operator.
  .default([]);

export const EMAIL_BACKENDS = ['log', 'directory', 'smtp'] as const;
export const UPLOAD_BACKENDS = ['local', 's3'] as const;

const schema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  /** Port of the API tier (and of the all-in-one server of the quick start). */
  PORT: port.default(9991),
  /** Port of a separately started events tier. */
  EVENTS_PORT: port.default(9993),
  /** Where a worker process serves GET /metrics (the worker has no other HTTP port). */
  WORKER_METRICS_PORT: port.default(9995),
  BIND_HOST: z.string().min(1).default('0.0.0.0'),
  /** Host (and port) clients use; `sub.EXTERNAL_HOST` serves the organization `sub`. */
  EXTERNAL_HOST: z
    .string()
    .regex(/^[a-z0-9.-]+(:\d+)?$/i, 'must be a host name with an optional :port')
    .default('localhost:9991'),
  EXTERNAL_URL_SCHEME: z.enum(['http', 'https']).default('http'),
  /** Domain of bot addresses when the organization's host cannot be one (it has a port):
   * Zulip's FAKE_EMAIL_DOMAIN, by default EXTERNAL_HOST without its port. */
  FAKE_EMAIL_DOMAIN: z
    .string()
    .regex(
      /^(localhost|([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63})$/i,
      'must be a domain an email address can have',
    )
    .optional(),
  DATABASE_URL: z.url({ protocol: /^postgres(ql)?$/ }),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(500).default(10),
  REDIS_URL: z.url({ protocol: /^rediss?$/ }),
  LOG_LEVEL: z.enum(['error', 'warn', 'info', 'http', 'debug']).default('http'),
  /** json in production, one readable line per entry otherwise. */
  LOG_FORMAT: z.enum(['json', 'pretty']).optional(),
  /** Number of notification-log shards (fixed per deployment: a user's shard is
   * floor(user_id / 1024) mod S, packages/events SHARD_USER_RANGE). */
  EVENT_SHARDS: z.coerce.number().int().min(1).max(1024).default(16),
  /** Shard leases of the events tier: a dead replica's shards move after this long. */
  EVENTS_LEASE_MS: z.coerce.number().int().min(100).max(600_000).default(10_000),
  /** Parked long-polls get a heartbeat after this many seconds plus up to the jitter (Zulip:
   * 45 + 0-10). */
  EVENTS_HEARTBEAT_SECONDS: z.coerce.number().min(0.05).max(600).default(45),
  EVENTS_HEARTBEAT_JITTER_SECONDS: z.coerce.number().min(0).max(600).default(10),
  /** How often expired queues are removed (Zulip: every minute). */
  EVENTS_GC_INTERVAL_MS: z.coerce.number().int().min(50).max(3_600_000).default(60_000),
  /** Fanned-out notifications stay in the shard logs this long before trimming. */
  EVENTS_LOG_RETAIN_MS: z.coerce.number().int().min(0).max(86_400_000).default(60_000),
  /** Largest request body accepted (Zulip: DATA_UPLOAD_MAX_MEMORY_SIZE, 25 MiB). */
  MAX_REQUEST_BODY_MIB: z.coerce.number().positive().max(1024).default(25),
  MAX_FILE_UPLOAD_SIZE_MIB: z.coerce.number().int().positive().max(10240).default(25),
  /** Where uploaded files live (Zulip's LOCAL_UPLOADS_DIR). Every API replica must see the
   * same directory: a shared volume in docker-compose.yml. */
  LOCAL_UPLOADS_DIR: z.string().min(1).default('.parley/uploads'),
  /** Where uploaded bytes live (docs/storage.md): `local` (LOCAL_UPLOADS_DIR) or `s3` (an
   * S3-compatible bucket, Zulip's S3 backend; the S3_* settings below keep Zulip's names). */
  UPLOAD_BACKEND: z.enum(UPLOAD_BACKENDS).default('local'),
  /** Bucket of uploaded files (required with UPLOAD_BACKEND=s3); custom emoji images go to
   * S3_AVATAR_BUCKET when set, else here too. */
  S3_AUTH_UPLOADS_BUCKET: z.string().min(3).max(63).optional(),
  S3_AVATAR_BUCKET: z.string().min(3).max(63).optional(),
  S3_REGION: z.string().min(1).default('us-east-1'),
  /** For S3-compatible storage other than AWS (MinIO, Ceph, R2…). */
  S3_ENDPOINT_URL: z.url({ protocol: /^https?$/ }).optional(),
  /** auto: path-style with S3_ENDPOINT_URL, virtual-hosted on AWS. */
  S3_ADDRESSING_STYLE: z.enum(['auto', 'path', 'virtual']).default('auto'),
  /** How files are served: `redirect` to a short-lived presigned URL (the bytes bypass the API
   * replicas), or `proxy` through the API (same origin and headers; the bucket may be private
   * to the servers' network). */
  S3_SERVE_MODE: z.enum(['redirect', 'proxy']).default('redirect'),
  /** Zulip's s3_key and s3_secret_key secrets; unset, the AWS SDK's own chain applies
   * (AWS_ACCESS_KEY_ID…, an instance or pod role). */
  S3_KEY: z.string().min(1).optional(),
  S3_SECRET_KEY: z.string().min(1).optional(),
  /** Uploads no message links are deleted once older than this many weeks (Zulip's
   * delete_old_unclaimed_attachments --weeks, 5 by default). */
  UNCLAIMED_UPLOADS_RETENTION_WEEKS: z.coerce.number().int().min(1).max(5200).default(5),
  /** Upload quota in GiB of organizations whose own (realm.upload_quota_gb) is unset; unset
   * here too, no quota (docs/uploads.md). */
  UPLOAD_QUOTA_GB: z.coerce.number().int().min(0).max(1_000_000).optional(),
  /** Unfinished resumable uploads (/api/v1/tus) are deleted this many hours after they began
   * (the worker's hourly upload clean-up). */
  TUS_UPLOAD_EXPIRATION_HOURS: z.coerce.number().min(1).max(8760).default(24),
  /** Trust X-Forwarded-* from the load balancer in front (nginx in infra/). */
  TRUST_PROXY: bool.default(false),
  PUSH_NOTIFICATIONS_ENABLED: bool.default(false),
  /** Where mobile push notifications go (docs/push-notifications.md): `log` records them (a
   * log line and a row of push_notification_log, nothing is delivered); `bouncer` posts them
   * to Zulip's push notification service (PUSH_BOUNCER_URL) as a registered server. */
  PUSH_TRANSPORT: z.enum(['log', 'bouncer']).default('log'),
  /** How long the `log` transport keeps its rows (they hold the notifications' text). */
  PUSH_LOG_RETENTION_HOURS: z.coerce.number().int().min(1).max(8760).default(24),
  /** Zulip's ZULIP_SERVICES_URL: the bouncer the `bouncer` transport posts to. */
  PUSH_BOUNCER_URL: z.url({ protocol: /^https?$/ }).default('https://push.zulipchat.com'),
  /** The server's registration with the bouncer (Zulip's zulip_org_id, a UUID, and
   * zulip_org_key): HTTP Basic credentials of every bouncer request. */
  ZULIP_ORG_ID: z.uuid().optional(),
  ZULIP_ORG_KEY: z.string().min(1).max(256).optional(),
  /** Zulip's PUSH_NOTIFICATION_REDACT_CONTENT: notifications say "New message" instead of
   * carrying the text. */
  PUSH_NOTIFICATION_REDACT_CONTENT: bool.default(false),
  /** Zulip's RATE_LIMITING switch. */
  RATE_LIMITING: bool.default(true),
  RATE_LIMITING_RULES: rateLimitingRules,
  /** Skip the request-volume limits (not failed logins) for requests from 127.0.0.1 and ::1.
   * Off unless set: the test suite sets it, since its clients all run on localhost. */
  RATE_LIMITING_EXEMPT_LOCALHOST: bool.default(false),
  /** Zulip's CAN_ACCESS_ALL_USERS_GROUP_LIMITS_PRESENCE: whether the organization's
   * can_access_all_users_group also limits what presence a restricted guest gets (the
   * organization's, one user's, presence events). Off, as in Zulip: filtering makes every
   * presence read and comeback ping cost more. */
  CAN_ACCESS_ALL_USERS_GROUP_LIMITS_PRESENCE: bool.default(false),
  /** How long email invitations and reusable links stay valid unless the request says
   * (Zulip's INVITATION_LINK_VALIDITY_DAYS, 10 days). */
  INVITATION_LINK_VALIDITY_MINUTES: z.coerce.number().int().min(1).default(14400),
  /** Invitation emails an organization may send per day (Zulip's
   * INVITES_DEFAULT_REALM_DAILY_MAX). */
  INVITES_DEFAULT_REALM_DAILY_MAX: z.coerce.number().int().min(0).default(100),
  /** Organizations younger than this many days share the limits below (Zulip's
   * INVITES_NEW_REALM_DAYS and INVITES_NEW_REALM_LIMIT_DAYS): across all of them, at most
   * `invitations` in the last `days`. */
  INVITES_NEW_REALM_DAYS: z.coerce.number().int().min(0).default(7),
  INVITES_NEW_REALM_LIMIT_DAYS: newRealmInviteLimits,
  /** In organizations anyone may join, accounts younger than this may not invite (Zulip's
   * INVITES_MIN_USER_AGE_DAYS). */
  INVITES_MIN_USER_AGE_DAYS: z.coerce.number().int().min(0).default(3),
  /** Where outgoing email goes: `log` (a line per message in the log, links left out),
   * `directory` (one .eml file per message in EMAIL_DIR) or `smtp` (SMTP_URL). */
  EMAIL_BACKEND: z.enum(EMAIL_BACKENDS).default('log'),
  EMAIL_DIR: z.string().min(1).default('.parley/emails'),
  /** smtp://user:password@host:587 or smtps://…:465 (required with EMAIL_BACKEND=smtp). */
  SMTP_URL: z.url({ protocol: /^smtps?$/ }).optional(),
  /** Sender of invitation emails (Zulip's NOREPLY_EMAIL_ADDRESS); by default
   * noreply@ EXTERNAL_HOST without its port. */
  NOREPLY_EMAIL_ADDRESS: z.email().optional(),
  /** The server administrator's address (Zulip's ZULIP_ADMINISTRATOR), named where Zulip sends
   * users to its support: an export too large to make from the API. By default
   * zulip-admin@ EXTERNAL_HOST without its port. */
  ZULIP_ADMINISTRATOR: z.email().optional(),
  /** Incoming email (Zulip's EMAIL_GATEWAY_PATTERN): the form of the addresses that post to
   * a channel, `%s` standing for the channel's token, e.g. `%s@streams.example.com`. Empty:
   * no gateway, and GET /streams/{id}/email_address answers "" (as Zulip). Mail to such an
   * address reaches Parley through `pnpm manage email-mirror` (docs/email-gateway.md). */
  EMAIL_GATEWAY_PATTERN: z
    .string()
    .regex(/^$|^[^\s%@]*%s[^\s%@]*@[^\s%@]+$/, 'must be empty or like %s@streams.example.com')
    .default(''),
  /** Video calls (docs/video-calls.md), under Zulip's setting names. The Jitsi Meet server of
   * organizations that set none of their own. */
  JITSI_SERVER_URL: z.url({ protocol: /^https?$/ }).default('https://meet.jit.si'),
  /** A Zoom OAuth app: with both, Zoom is offered (users connect their own accounts), or, with
   * VIDEO_ZOOM_SERVER_TO_SERVER_ACCOUNT_ID too, a server-to-server app that creates meetings
   * for users by their email address. */
  VIDEO_ZOOM_CLIENT_ID: z.string().min(1).optional(),
  VIDEO_ZOOM_CLIENT_SECRET: z.string().min(1).optional(),
  VIDEO_ZOOM_SERVER_TO_SERVER_ACCOUNT_ID: z.string().min(1).optional(),
  /** Zoom's webhook secret token: when set, POST /calls/zoom/deauthorize checks Zoom's
   * signature and forgets the token of the user who removed the app. */
  VIDEO_ZOOM_WEBHOOK_SECRET: z.string().min(1).optional(),
  /** Zoom's API and OAuth hosts (tests point them at a local server). */
  VIDEO_ZOOM_API_URL: z.url({ protocol: /^https?$/ }).default('https://api.zoom.us'),
  VIDEO_ZOOM_OAUTH_URL: z.url({ protocol: /^https?$/ }).default('https://zoom.us'),
  /** A BigBlueButton server: its API base (…/bigbluebutton/; the trailing slash, which the
   * API calls are appended to, is added when missing) and shared secret. */
  BIG_BLUE_BUTTON_URL: z
    .url({ protocol: /^https?$/ })
    .transform((url) => (url.endsWith('/') ? url : `${url}/`))
    .optional(),
  BIG_BLUE_BUTTON_SECRET: z.string().min(1).optional(),
});

export type Config = z.infer<typeof schema> & { LOG_FORMAT: 'json' | 'pretty' };

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Parses `env`; throws a ConfigError listing every problem. Pure: tests pass their own env. */
export function parseConfig(env: Record<string, string | undefined>): Config {
  // Empty variables (FOO= in a .env file) mean "unset", as most tools treat them.
  const present = Object.fromEntries(
    Object.entries(env).filter(([, v]) => v !== undefined && v !== ''),
  );
  const result = schema
    .refine(
      (config) =>
        config.PUSH_TRANSPORT !== 'bouncer' ||
        (config.ZULIP_ORG_ID !== undefined && config.ZULIP_ORG_KEY !== undefined),
      { message: 'ZULIP_ORG_ID and ZULIP_ORG_KEY are required', path: ['PUSH_TRANSPORT'] },
    )
    .refine(
      // The bouncer gets the server's key with every request: cleartext only on this machine.
      (config) => {
        const url = new URL(config.PUSH_BOUNCER_URL);
        return (
          url.protocol === 'https:' || ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname)
        );
      },
      { message: 'must be https (http only to this machine)', path: ['PUSH_BOUNCER_URL'] },
    )
    .refine((config) => config.EMAIL_BACKEND !== 'smtp' || config.SMTP_URL !== undefined, {
      message: 'is required when EMAIL_BACKEND is smtp',
      path: ['SMTP_URL'],
    })
    .refine(
      (config) => config.UPLOAD_BACKEND !== 's3' || config.S3_AUTH_UPLOADS_BUCKET !== undefined,
      { message: 'is required when UPLOAD_BACKEND is s3', path: ['S3_AUTH_UPLOADS_BUCKET'] },
    )
    .refine((config) => (config.S3_KEY === undefined) === (config.S3_SECRET_KEY === undefined), {
      message: 'S3_KEY and S3_SECRET_KEY go together',
      path: ['S3_SECRET_KEY'],
    })
    .safeParse(present);
  if (!result.success) {
    throw new ConfigError(
      result.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`),
    );
  }
  const config = result.data;
  return {
    ...config,
    LOG_FORMAT: config.LOG_FORMAT ?? (config.NODE_ENV === 'production' ? 'json' : 'pretty'),
  };
}

let cached: Config | undefined;

/** The process's configuration, read once (a .env file in the working directory fills gaps). */
export function getConfig(): Config {
  if (!cached) {
    if (existsSync('.env')) process.loadEnvFile('.env');
    cached = parseConfig(process.env);
  }
  return cached;
}

/** For tests and the all-in-one starter, which set the environment before first use. */
export function resetConfig(): void {
  cached = undefined;
}

export const ZULIP_VERSION = '11.0-parley-0.1.0';
export const ZULIP_MERGE_BASE = ZULIP_VERSION;
/** The API feature level Parley advertises (the spec's newest). */
export const ZULIP_FEATURE_LEVEL = 496;
