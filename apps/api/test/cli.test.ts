// Runs `manage` as operators do: a separate process, its output parsed as JSON.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { getPrisma } from '@parley/db';
import { verifyPassword } from '../src/lib/credentials';
import { uniqueSubdomain } from './helpers';

const run = promisify(execFile);
const root = join(__dirname, '..', '..', '..');
const tsx = join(root, 'node_modules', '.bin', 'tsx');
const cli = join(root, 'apps', 'api', 'src', 'cli', 'manage.ts');

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

async function manage(...args: string[]): Promise<CliResult> {
  try {
    const { stdout, stderr } = await run(tsx, [cli, ...args], { cwd: root, env: process.env });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

function json(result: CliResult): Record<string, unknown> {
  expect(result.stdout.trim().split('\n')).toHaveLength(1);
  return JSON.parse(result.stdout) as Record<string, unknown>;
}

describe('pnpm manage', () => {
  const subdomain = uniqueSubdomain('cli');
  const ownerEmail = `boss@${subdomain}.test`;
  let created: Record<string, unknown>;

  beforeAll(async () => {
    const result = await manage(
      'create-organization',
      '--name',
      'CLI Org',
      '--subdomain',
      subdomain,
      '--owner-email',
      ownerEmail,
      '--owner-name',
      'Boss Person',
      '--owner-password',
      'correct horse',
      '--json',
    );
    expect(result.code).toBe(0);
    created = json(result);
  });

  it('create-organization --json prints the realm, its URL and the owner credentials', async () => {
    expect(created).toMatchObject({
      subdomain,
      name: 'CLI Org',
      url: `http://${subdomain}.localhost:9991`,
      email: ownerEmail,
    });
    const owner = await getPrisma().user.findUniqueOrThrow({
      where: { id: created.user_id as number },
    });
    expect(owner).toMatchObject({
      realmId: created.realm_id,
      role: 100,
      apiKey: created.api_key,
      isActive: true,
    });
    expect(created.api_key).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(await verifyPassword('correct horse', owner.passwordHash)).toBe(true);
    expect(await verifyPassword('wrong horse', owner.passwordHash)).toBe(false);
    // Zulip's first channels, with the Welcome Bot's conversations (initial-realm.test.ts).
    const channels = await getPrisma().stream.findMany({
      where: { realmId: created.realm_id as number },
      orderBy: { id: 'asc' },
    });
    expect(channels.map((c) => c.name)).toEqual(['Zulip', 'sandbox', 'general']);
  });

  it('creates the role system groups with the owner in role:owners', async () => {
    const groups = await getPrisma().userGroup.findMany({
      where: { realmId: created.realm_id as number, isSystemGroup: true },
      include: { members: true, subgroups: { include: { subgroup: true } } },
    });
    expect(groups.map((g) => g.name).sort()).toEqual([
      'role:administrators',
      'role:everyone',
      'role:fullmembers',
      'role:internet',
      'role:members',
      'role:moderators',
      'role:nobody',
      'role:owners',
    ]);
    const owners = groups.find((g) => g.name === 'role:owners')!;
    expect(owners.members.map((m) => m.userId)).toEqual([created.user_id]);
    const admins = groups.find((g) => g.name === 'role:administrators')!;
    expect(admins.subgroups.map((edge) => edge.subgroup.name)).toEqual(['role:owners']);
  });

  it('create-user, show-api-key, list-users and set-password work on that organization', async () => {
    const email = `mod@${subdomain}.test`;
    const user = json(
      await manage(
        'create-user',
        '--realm',
        subdomain,
        '--email',
        email,
        '--name',
        'Mo Derator',
        '--role',
        'moderator',
        '--json',
      ),
    );
    expect(user).toMatchObject({
      email,
      full_name: 'Mo Derator',
      role: 300,
      realm_id: created.realm_id,
    });

    const key = json(
      await manage('show-api-key', '--realm', subdomain, '--email', email.toUpperCase(), '--json'),
    );
    expect(key).toEqual({ user_id: user.user_id, email, api_key: user.api_key });

    const listed = json(await manage('list-users', '--realm', subdomain, '--json'));
    expect(listed.users).toEqual([
      {
        user_id: created.user_id,
        email: ownerEmail,
        full_name: 'Boss Person',
        role: 100,
        is_active: true,
        is_bot: false,
      },
      // Created to send each new user Zulip's welcome message.
      {
        user_id: expect.any(Number),
        email: 'welcome-bot@zulip.com',
        full_name: 'Welcome Bot',
        role: 400,
        is_active: true,
        is_bot: true,
      },
      {
        user_id: user.user_id,
        email,
        full_name: 'Mo Derator',
        role: 300,
        is_active: true,
        is_bot: false,
      },
    ]);

    const set = await manage(
      'set-password',
      '--realm',
      subdomain,
      '--email',
      email,
      '--password',
      's3cret!',
    );
    expect(set.code).toBe(0);
    const stored = await getPrisma().user.findUniqueOrThrow({
      where: { id: user.user_id as number },
    });
    expect(await verifyPassword('s3cret!', stored.passwordHash)).toBe(true);
  });

  it('accepts numeric roles and rejects unknown ones', async () => {
    const guest = json(
      await manage(
        'create-user',
        '--realm',
        subdomain,
        '--email',
        `g@${subdomain}.test`,
        '--name',
        'Guest',
        '--role',
        '600',
        '--json',
      ),
    );
    expect(guest.role).toBe(600);
    const bad = await manage(
      'create-user',
      '--realm',
      subdomain,
      '--email',
      `x@${subdomain}.test`,
      '--name',
      'X',
      '--role',
      'emperor',
      '--json',
    );
    expect(bad.code).toBe(1);
    expect(json(bad)).toEqual({ result: 'error', msg: "Invalid role 'emperor'" });
  });

  it('refuses a taken subdomain, a duplicate email and a bad email with exit code 1', async () => {
    const taken = await manage(
      'create-organization',
      '--name',
      'Again',
      '--subdomain',
      subdomain,
      '--owner-email',
      'a@b.test',
      '--owner-name',
      'A',
      '--json',
    );
    expect(taken.code).toBe(1);
    expect(json(taken)).toEqual({ result: 'error', msg: 'Subdomain is already in use' });
    const duplicate = await manage(
      'create-user',
      '--realm',
      subdomain,
      '--email',
      ownerEmail.toUpperCase(),
      '--name',
      'Dup',
    );
    expect(duplicate.code).toBe(1);
    expect(duplicate.stderr).toContain('Email is already in use.');
    const invalid = await manage(
      'create-user',
      '--realm',
      subdomain,
      '--email',
      'not-an-email',
      '--name',
      'Bad',
    );
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toContain("Invalid email 'not-an-email'");
  });

  it('grant-permission grants and revokes the server-level special permissions', async () => {
    const granted = json(
      await manage(
        'grant-permission',
        '--realm',
        subdomain,
        '--email',
        ownerEmail,
        '--permission',
        'can_create_users',
        '--json',
      ),
    );
    expect(granted).toEqual({
      user_id: created.user_id,
      email: ownerEmail,
      permission: 'can_create_users',
      granted: true,
    });
    const owner = () =>
      getPrisma().user.findUniqueOrThrow({ where: { id: created.user_id as number } });
    expect((await owner()).canCreateUsers).toBe(true);
    await manage(
      'grant-permission',
      '--realm',
      subdomain,
      '--email',
      ownerEmail,
      '--permission',
      'can_create_users',
      '--revoke',
    );
    expect((await owner()).canCreateUsers).toBe(false);
    const unknown = await manage(
      'grant-permission',
      '--realm',
      subdomain,
      '--email',
      ownerEmail,
      '--permission',
      'root',
      '--json',
    );
    expect(json(unknown)).toEqual({ result: 'error', msg: "Unknown permission 'root'" });
  });

  it('set-jwt-key stores the key and signed algorithms only, and can disable JWT login', async () => {
    const realm = () =>
      getPrisma().realm.findUniqueOrThrow({ where: { id: created.realm_id as number } });
    const enabled = json(
      await manage(
        'set-jwt-key',
        '--realm',
        subdomain,
        '--key',
        'secret',
        '--algorithms',
        'HS256, HS512',
        '--json',
      ),
    );
    expect(enabled).toEqual({
      realm_id: created.realm_id,
      enabled: true,
      algorithms: ['HS256', 'HS512'],
    });
    expect(await realm()).toMatchObject({ jwtKey: 'secret', jwtAlgorithms: ['HS256', 'HS512'] });
    const none = await manage(
      'set-jwt-key',
      '--realm',
      subdomain,
      '--key',
      'secret',
      '--algorithms',
      'none',
      '--json',
    );
    expect(none.code).toBe(1);
    expect((json(none).msg as string).startsWith("Unsupported algorithm 'none'")).toBe(true);
    await manage('set-jwt-key', '--realm', subdomain, '--disable');
    expect(await realm()).toMatchObject({ jwtKey: null, jwtAlgorithms: [] });
  });

  it('explains usage for unknown commands, unknown options and missing options', async () => {
    const unknown = await manage('make-coffee');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("Unknown command 'make-coffee'");
    const badOption = await manage('list-users', '--colour', 'blue');
    expect(badOption.code).toBe(2);
    const missing = await manage('create-user', '--realm', subdomain, '--name', 'No Email');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('Missing --email');
    const noRealm = await manage('list-users', '--realm', 'nowhere-at-all', '--json');
    expect(json(noRealm)).toEqual({
      result: 'error',
      msg: "No organization with subdomain 'nowhere-at-all'",
    });
  });
});
