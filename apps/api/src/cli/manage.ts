// `pnpm manage <command>`: the operators' tool, like Zulip's manage.py. With --json each
// command prints exactly one JSON object on stdout (a stable contract for scripts).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { resetConfig } from '@parley/config';
import {
  disconnectPrisma,
  getPrisma,
  idsByLowerEquals,
  ROLE_NAMES,
  runAction,
  type Realm,
  type RoleValue,
} from '@parley/db';
import { JsonableError, RateLimitedError } from '@parley/errors';
import { repoRoot } from '@parley/devservices';
import {
  closeQueues,
  failedJobQueues,
  FailedJobLookupError,
  listFailedJobs,
  QUEUE_NAMES,
  removeFailedJob,
  retryFailedJob,
  type FailedJob,
} from '@parley/jobs';
import { doCreateInitialChannels, sendInitialRealmMessages } from '../actions/initial-realm';
import { sendInitialDirectMessage, sendNewUserMessages } from '../actions/onboarding';
import { checkOrganization, doCreateOrganization } from '../actions/realms';
import { doSetRealmUploadLimits, type RealmUploadLimits } from '../actions/uploads';
import { maxFileUploadSizeMib, uploadQuotaGb } from '../lib/upload-limits';
import {
  checkCreateUser,
  checkRole,
  doCreateUser,
  doSetPassword,
  passwordHashFor,
} from '../actions/users';
import { realmUrl } from '@parley/auth';
import { createLogger, defaultLoggerOptions, getLogger, setLogger } from '@parley/logger';
import { doReceiveEmail } from '../actions/email-gateway';
import { EmailForwardError, EX_DATAERR, EX_NOPERM, EX_TEMPFAIL } from '../lib/email-gateway';
import { outboxSettled, SETTLE_ON_STOP_MS } from '../lib/outbox';

type Options = Record<string, string | boolean | undefined>;

interface Command {
  summary: string;
  options: Record<string, { type: 'string' | 'boolean'; required?: boolean; help: string }>;
  run(options: Options): Promise<{ json: Record<string, unknown>; text: string }>;
}

const realmOption = {
  type: 'string' as const,
  help: 'subdomain of the organization ("" or omitted: the root organization)',
};

/** Failed jobs listed unless --limit says. */
const FAILED_JOBS_LIMIT = 20;

const commands: Record<string, Command> = {
  'create-organization': {
    summary: 'Create an organization and its first owner',
    options: {
      name: { type: 'string', required: true, help: 'organization name' },
      subdomain: {
        type: 'string',
        help: 'subdomain; empty (the default) is the root organization',
      },
      'owner-email': { type: 'string', required: true, help: "owner's email address" },
      'owner-name': { type: 'string', required: true, help: "owner's full name" },
      'owner-password': { type: 'string', help: "owner's password (omit for API-key-only access)" },
    },
    async run(o) {
      const org = checkOrganization({
        name: str(o.name),
        subdomain: str(o.subdomain ?? ''),
        ownerEmail: str(o['owner-email']),
        ownerFullName: str(o['owner-name']),
        ownerPassword: o['owner-password'] === undefined ? null : str(o['owner-password']),
      });
      const hash = await passwordHashFor(org.ownerPassword);
      const { realm, owner } = await runAction(async (ctx) => {
        const created = await doCreateOrganization(ctx, org, hash);
        await doCreateInitialChannels(ctx, created.realm, created.owner);
        return created;
      });
      await sendInitialRealmMessages(realm, owner);
      await sendInitialDirectMessage(realm, owner);
      const url = realmUrl(realm);
      return {
        json: {
          realm_id: realm.id,
          name: realm.name,
          subdomain: realm.stringId,
          url,
          user_id: owner.id,
          email: owner.email,
          full_name: owner.fullName,
          api_key: owner.apiKey,
        },
        text: `Created organization "${realm.name}" at ${url}\nOwner: ${owner.email} (user ${owner.id})\nAPI key: ${owner.apiKey}`,
      };
    },
  },
  'create-user': {
    summary: 'Create a user in an organization',
    options: {
      realm: realmOption,
      email: { type: 'string', required: true, help: 'email address' },
      name: { type: 'string', required: true, help: 'full name' },
      password: { type: 'string', help: 'password (omit for API-key-only access)' },
      role: {
        type: 'string',
        help: 'owner, admin, moderator, member (default) or guest, or 100-600',
      },
    },
    async run(o) {
      const realm = await findRealm(o.realm);
      const role = parseRole(o.role === undefined ? 'member' : str(o.role));
      const password = o.password === undefined ? null : str(o.password);
      const hash = await passwordHashFor(password);
      const user = await runAction(async (ctx) => {
        const fields = await checkCreateUser(ctx.tx, realm, {
          email: str(o.email),
          fullName: str(o.name),
          password,
          role,
        });
        return doCreateUser(ctx, realm, fields, hash);
      });
      await sendNewUserMessages(realm, user);
      return {
        json: {
          realm_id: realm.id,
          user_id: user.id,
          email: user.email,
          full_name: user.fullName,
          role: user.role,
          api_key: user.apiKey,
        },
        text: `Created ${user.email} (user ${user.id}, role ${user.role})\nAPI key: ${user.apiKey}`,
      };
    },
  },
  'set-password': {
    summary: "Set a user's password",
    options: {
      realm: realmOption,
      email: { type: 'string', required: true, help: 'email address' },
      password: { type: 'string', required: true, help: 'new password' },
    },
    async run(o) {
      const realm = await findRealm(o.realm);
      const user = await findUser(realm, str(o.email));
      const hash = (await passwordHashFor(str(o.password)))!;
      await runAction((ctx) => doSetPassword(ctx, user, hash, null));
      return {
        json: { user_id: user.id, email: user.email },
        text: `Password set for ${user.email}`,
      };
    },
  },
  'show-api-key': {
    summary: "Print a user's API key",
    options: {
      realm: realmOption,
      email: { type: 'string', required: true, help: 'email address' },
    },
    async run(o) {
      const realm = await findRealm(o.realm);
      const user = await findUser(realm, str(o.email));
      return {
        json: { user_id: user.id, email: user.email, api_key: user.apiKey },
        text: user.apiKey,
      };
    },
  },
  'grant-permission': {
    summary: 'Grant (or with --revoke, take back) a server-level special permission',
    options: {
      realm: realmOption,
      email: { type: 'string', required: true, help: 'email address' },
      permission: {
        type: 'string',
        required: true,
        help: 'can_create_users or can_change_user_emails',
      },
      revoke: { type: 'boolean', help: 'take the permission back' },
    },
    async run(o) {
      const realm = await findRealm(o.realm);
      const user = await findUser(realm, str(o.email));
      const column = SPECIAL_PERMISSIONS[str(o.permission)];
      if (!column) throw new JsonableError(`Unknown permission '${str(o.permission)}'`);
      const granted = o.revoke !== true;
      await getPrisma().user.update({ where: { id: user.id }, data: { [column]: granted } });
      return {
        json: {
          user_id: user.id,
          email: user.deliveryEmail,
          permission: str(o.permission),
          granted,
        },
        text: `${granted ? 'Granted' : 'Revoked'} ${str(o.permission)} ${granted ? 'to' : 'from'} ${user.deliveryEmail}`,
      };
    },
  },
  'set-jwt-key': {
    summary:
      'Enable JWT login (POST /jwt/fetch_api_key) for an organization, or disable it with --disable',
    options: {
      realm: realmOption,
      key: { type: 'string', help: 'the HMAC secret or PEM public key tokens are verified with' },
      algorithms: {
        type: 'string',
        help: 'comma-separated, e.g. HS256 or RS256,ES256 (never none)',
      },
      disable: { type: 'boolean', help: 'turn JWT login off' },
    },
    async run(o) {
      const realm = await findRealm(o.realm);
      if (o.disable === true) {
        await getPrisma().realm.update({
          where: { id: realm.id },
          data: { jwtKey: null, jwtAlgorithms: [] },
        });
        return { json: { realm_id: realm.id, enabled: false }, text: 'JWT login disabled' };
      }
      const key = str(o.key);
      const algorithms = str(o.algorithms)
        .split(',')
        .map((a) => a.trim())
        .filter(Boolean);
      if (key === '') throw new JsonableError('--key is required');
      if (algorithms.length === 0) throw new JsonableError('--algorithms is required');
      const unknown = algorithms.find((alg) => !JWT_ALGORITHMS.includes(alg));
      if (unknown)
        throw new JsonableError(
          `Unsupported algorithm '${unknown}' (allowed: ${JWT_ALGORITHMS.join(', ')})`,
        );
      await getPrisma().realm.update({
        where: { id: realm.id },
        data: { jwtKey: key, jwtAlgorithms: algorithms },
      });
      return {
        json: { realm_id: realm.id, enabled: true, algorithms },
        text: `JWT login enabled (${algorithms.join(', ')})`,
      };
    },
  },
  'set-upload-limits': {
    summary: "Set an organization's upload quota and file size limit (docs/uploads.md)",
    options: {
      realm: realmOption,
      'quota-gb': {
        type: 'string',
        help: 'total size of its uploads in GiB, or "default" (UPLOAD_QUOTA_GB, else none)',
      },
      'max-file-size-mib': {
        type: 'string',
        help: 'largest file in MiB, or "default" (MAX_FILE_UPLOAD_SIZE_MIB, also the most)',
      },
    },
    async run(o) {
      const realm = await findRealm(o.realm);
      const limits: RealmUploadLimits = {};
      if (o['quota-gb'] !== undefined)
        limits.uploadQuotaGb = limitValue(str(o['quota-gb']), 'quota-gb', 0);
      if (o['max-file-size-mib'] !== undefined)
        limits.maxFileUploadSizeMib = limitValue(
          str(o['max-file-size-mib']),
          'max-file-size-mib',
          1,
        );
      const updated = await runAction((ctx) => doSetRealmUploadLimits(ctx, realm, limits));
      const quota = uploadQuotaGb(updated);
      const maxFile = maxFileUploadSizeMib(updated);
      return {
        json: { realm_id: realm.id, upload_quota_gb: quota, max_file_upload_size_mib: maxFile },
        text: `Upload quota: ${quota === null ? 'none' : `${quota} GiB`}; largest file: ${maxFile} MiB`,
      };
    },
  },
  'list-users': {
    summary: 'List the users of an organization',
    options: { realm: realmOption },
    async run(o) {
      const realm = await findRealm(o.realm);
      const users = await getPrisma().user.findMany({
        where: { realmId: realm.id },
        orderBy: { id: 'asc' },
      });
      const rows = users.map((u) => ({
        user_id: u.id,
        email: u.deliveryEmail,
        full_name: u.fullName,
        role: u.role,
        is_active: u.isActive,
        is_bot: u.isBot,
      }));
      const text = rows
        .map(
          (r) =>
            `${r.user_id}\t${r.email}\t${r.full_name}\trole ${r.role}${r.is_active ? '' : '\t(deactivated)'}${r.is_bot ? '\t(bot)' : ''}`,
        )
        .join('\n');
      return { json: { realm_id: realm.id, users: rows }, text: text || '(no users)' };
    },
  },
  'email-mirror': {
    summary:
      'Post a mail to the channel its address names, or a reply to a missed-message email (a mail server pipes each message here)',
    options: {
      recipient: {
        type: 'string',
        required: true,
        help: 'the address the mail was delivered to (EMAIL_GATEWAY_PATTERN)',
      },
      file: { type: 'string', help: 'the message (RFC 5322); default: standard input' },
    },
    // Its exit status is sysexits(3)'s, which the mail server acts on: a refusal returns the
    // mail to its sender, a failure of Parley's own (75) keeps it to try again.
    async run(o) {
      const raw = o.file === undefined ? await readStdin() : readFileSync(str(o.file));
      if (raw.length > MAX_MAIL_BYTES)
        throw new CommandRefusal(`Mail larger than ${MAX_MAIL_BYTES} bytes`, EX_DATAERR);
      let posted: Awaited<ReturnType<typeof doReceiveEmail>>;
      try {
        posted = await doReceiveEmail(str(o.recipient), raw);
      } catch (error) {
        if (error instanceof EmailForwardError)
          throw new CommandRefusal(error.message, error.status);
        // The organization's mail limit: the mail server tries again once the window passed.
        if (error instanceof RateLimitedError) throw new CommandRefusal(error.message, EX_TEMPFAIL);
        if (error instanceof JsonableError) throw new CommandRefusal(error.message, EX_NOPERM);
        getLogger().error('posting a mail failed; the mail server will try again', { error });
        throw new CommandRefusal('Temporary failure, try again later', EX_TEMPFAIL);
      }
      return {
        json: {
          message_id: posted.messageId,
          stream_id: posted.channelId,
          topic: posted.topic,
        },
        text:
          posted.channelId === null
            ? `Posted direct message ${posted.messageId}`
            : `Posted message ${posted.messageId} to channel ${posted.channelId}, topic "${posted.topic}"`,
      };
    },
  },
  'failed-jobs': {
    summary: 'List failed background jobs, newest first; --retry or --remove one',
    options: {
      queue: { type: 'string', help: `only this queue (${QUEUE_NAMES.join(', ')}); default: all` },
      limit: { type: 'string', help: `how many to list (default ${FAILED_JOBS_LIMIT})` },
      retry: { type: 'string', help: 'id of a failed job to put back in its queue, to run now' },
      remove: { type: 'string', help: 'id of a failed job to delete' },
    },
    async run(o) {
      const queues = await jobLookup(async () =>
        failedJobQueues(o.queue === undefined ? undefined : str(o.queue)),
      );
      if (o.retry !== undefined && o.remove !== undefined)
        throw new JsonableError('Give --retry or --remove, not both');
      if (o.retry !== undefined || o.remove !== undefined) {
        const retry = o.retry !== undefined;
        const id = str(retry ? o.retry : o.remove);
        const job = await jobLookup(() =>
          retry ? retryFailedJob(id, queues) : removeFailedJob(id, queues),
        );
        return {
          json: { [retry ? 'retried' : 'removed']: failedJobJson(job) },
          text: `${retry ? 'Queued again' : 'Removed'}: ${job.queue} job ${job.id} (${job.name})`,
        };
      }
      const limit = o.limit === undefined ? String(FAILED_JOBS_LIMIT) : str(o.limit);
      if (!/^\d{1,4}$/.test(limit))
        throw new JsonableError(`Invalid --limit '${limit}' (a number up to 9999)`);
      const { counts, jobs } = await listFailedJobs({ queues, limit: Number(limit) });
      const total = Object.values(counts).reduce((sum, count) => sum + count, 0);
      const lines = [
        `Failed jobs: ${Object.entries(counts)
          .map(([queue, count]) => `${queue} ${count}`)
          .join(', ')}${total > jobs.length ? ` (newest ${jobs.length} shown)` : ''}`,
        ...jobs.map(failedJobText),
      ];
      return {
        json: { counts, jobs: jobs.map(failedJobJson) },
        text: lines.join('\n'),
      };
    },
  },
};

/** Errors of a queue or job the operator named become the command's error message. */
async function jobLookup<T>(lookup: () => Promise<T>): Promise<T> {
  try {
    return await lookup();
  } catch (error) {
    if (error instanceof FailedJobLookupError) throw new JsonableError(error.message);
    throw error;
  }
}

function isoTime(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

function failedJobJson(job: FailedJob): Record<string, unknown> {
  return {
    queue: job.queue,
    name: job.name,
    id: job.id,
    attempts_made: job.attemptsMade,
    attempts: job.attempts,
    failed_reason: job.failedReason,
    finished_time: isoTime(job.finishedOn),
    created_time: isoTime(job.createdOn),
    data: job.data,
  };
}

function failedJobText(job: FailedJob): string {
  return [
    `${job.queue}\t${job.name}\tid ${job.id}\tattempts ${job.attemptsMade}/${job.attempts}\tfailed ${isoTime(job.finishedOn) ?? '?'}`,
    `    reason: ${job.failedReason}`,
    `    data: ${JSON.stringify(job.data)}`,
  ].join('\n');
}

const SPECIAL_PERMISSIONS: Record<string, 'canCreateUsers' | 'canChangeUserEmails'> = {
  can_create_users: 'canCreateUsers',
  can_change_user_emails: 'canChangeUserEmails',
};

// Signed algorithms only: `none` would accept unsigned tokens.
const JWT_ALGORITHMS = [
  'HS256',
  'HS384',
  'HS512',
  'RS256',
  'RS384',
  'RS512',
  'ES256',
  'ES384',
  'ES512',
  'PS256',
  'PS384',
  'PS512',
];

/** A limit option: a whole number from `min`, or "default" (null). */
function limitValue(value: string, option: string, min: number): number | null {
  if (value === 'default') return null;
  if (!/^\d{1,9}$/.test(value) || Number(value) < min)
    throw new JsonableError(`--${option} must be a whole number from ${min}, or "default"`);
  return Number(value);
}

function str(value: string | boolean | undefined): string {
  return typeof value === 'string' ? value : '';
}

function parseRole(value: string): RoleValue {
  const named = ROLE_NAMES[value.toLowerCase()];
  if (named !== undefined) return named;
  if (!/^\d+$/.test(value)) throw new JsonableError(`Invalid role '${value}'`);
  return checkRole(Number(value));
}

async function findRealm(subdomain: string | boolean | undefined): Promise<Realm> {
  const stringId = str(subdomain).trim().toLowerCase();
  const realm = await getPrisma().realm.findUnique({ where: { stringId } });
  if (!realm) throw new JsonableError(`No organization with subdomain '${stringId}'`);
  return realm;
}

async function findUser(realm: Realm, email: string) {
  const prisma = getPrisma();
  const [id] = await idsByLowerEquals(prisma, 'user_profile', 'delivery_email', realm.id, [
    email.trim(),
  ]);
  const user = id === undefined ? null : await prisma.user.findUnique({ where: { id } });
  if (!user) throw new JsonableError(`No user ${email} in this organization`);
  return user;
}

/** A command's refusal with an exit status other than 1. */
class CommandRefusal extends JsonableError {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/** The largest mail email-mirror reads (Postfix's own default limit is 10 MB). */
const MAX_MAIL_BYTES = 64 * 1024 * 1024;

/** Standard input, or as much of it as is one byte over `MAX_MAIL_BYTES`. */
async function readStdin(): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin) {
    chunks.push(chunk as Buffer);
    size += (chunk as Buffer).length;
    if (size > MAX_MAIL_BYTES) break;
  }
  return Buffer.concat(chunks);
}

function usage(): string {
  const lines = ['Usage: pnpm manage <command> [options] [--json]', '', 'Commands:'];
  for (const [name, command] of Object.entries(commands)) {
    lines.push(`  ${name.padEnd(20)} ${command.summary}`);
    for (const [option, spec] of Object.entries(command.options)) {
      lines.push(`      --${option}${spec.required ? ' (required)' : ''}: ${spec.help}`);
    }
  }
  return lines.join('\n');
}

/** With nothing configured, use the services the all-in-one server found (it writes them to
 * .parley/runtime.env), then the local defaults. */
function loadServiceEnv(): void {
  // Only in a checkout: a production image configures DATABASE_URL and has no repository.
  if (!process.env.DATABASE_URL) {
    const runtimeEnv = join(repoRoot(), '.parley', 'runtime.env');
    if (existsSync(runtimeEnv)) process.loadEnvFile(runtimeEnv);
  }
  process.env.DATABASE_URL ||= 'postgresql://postgres@127.0.0.1:5432/parley';
  process.env.REDIS_URL ||= 'redis://127.0.0.1:6379';
  resetConfig();
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  const command = name ? commands[name] : undefined;
  if (!command || name === undefined) {
    process.stderr.write(
      `${name && name !== 'help' && name !== '--help' ? `Unknown command '${name}'\n\n` : ''}${usage()}\n`,
    );
    return name === 'help' || name === '--help' ? 0 : 2;
  }
  let values: Options;
  try {
    values = parseArgs({
      args: rest,
      options: {
        json: { type: 'boolean' },
        ...Object.fromEntries(
          Object.entries(command.options).map(([k, v]) => [k, { type: v.type }]),
        ),
      },
      strict: true,
      allowPositionals: false,
    }).values;
    const missing = Object.entries(command.options).filter(
      ([k, v]) => v.required && values[k] === undefined,
    );
    if (missing.length > 0) throw new Error(`Missing ${missing.map(([k]) => `--${k}`).join(', ')}`);
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n\n${usage()}\n`);
    return 2;
  }
  loadServiceEnv();
  // Stdout is the command's answer (one JSON object with --json): log lines go to stderr.
  setLogger(createLogger({ ...defaultLoggerOptions(), toStderr: true }));
  try {
    const result = await command.run(values);
    process.stdout.write(`${values.json ? JSON.stringify(result.json) : result.text}\n`);
    return 0;
  } catch (error) {
    if (!(error instanceof JsonableError)) throw error;
    if (values.json)
      process.stdout.write(`${JSON.stringify({ result: 'error', msg: error.message })}\n`);
    else process.stderr.write(`Error: ${error.message}\n`);
    return error instanceof CommandRefusal ? error.status : 1;
  } finally {
    // A message the command sent (an organization's first ones, a mail) publishes its events
    // after its commit: they go out before the process exits, or the API's relay takes them.
    await outboxSettled(SETTLE_ON_STOP_MS);
    await Promise.all([disconnectPrisma(), closeQueues()]);
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(
        `${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
      );
      process.exit(1);
    },
  );
}
