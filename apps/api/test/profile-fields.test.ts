// Custom profile fields (spec 2.8, 4.7): the organization's field definitions and users'
// values, their events, and the register state they feed.
import type { Response } from 'supertest';
import { getPrisma, Role, type User } from '@parley/db';
import type { QueuedEvent } from '@parley/events';
import { applyEvent, type StateOptions } from '../src/lib/initial-state';
import {
  as,
  captureEvents,
  createTestRealm,
  createTestUser,
  expectError,
  expectSuccess,
  setGuestAccess,
  type Published,
  type TestRealm,
} from './helpers';
import { permissionMatrix, type MatrixContext, type Operation } from './permission-matrix';

const prisma = () => getPrisma();

interface Org extends TestRealm {
  admin: User;
  member: User;
  guest: User;
  bot: User;
}

async function createOrg(): Promise<Org> {
  const org = await createTestRealm();
  const admin = await createTestUser(org.realm, Role.ADMINISTRATOR, { fullName: 'Ada Admin' });
  const member = await createTestUser(org.realm, Role.MEMBER, { fullName: 'Max Member' });
  const guest = await createTestUser(org.realm, Role.GUEST, { fullName: 'Gus Guest' });
  const botId = expectSuccess(
    await as(member, org.host).post('/bots', { full_name: 'Field bot', short_name: 'fields' }),
  ).user_id as number;
  const bot = await prisma().user.findUniqueOrThrow({ where: { id: botId } });
  return { ...org, admin, member, guest, bot };
}

/** Every active user of the organization: who hears of field definition changes. */
async function everyone(org: Org): Promise<number[]> {
  const users = await prisma().user.findMany({
    where: { realmId: org.realm.id, isActive: true },
    select: { id: true },
    orderBy: { id: 'asc' },
  });
  return users.map((user) => user.id);
}

type Field = Record<string, unknown> & { id: number; name: string };

const list = async (org: Org, user: User = org.member) =>
  expectSuccess(await as(user, org.host).get('/realm/profile_fields')).custom_fields as Field[];

const create = (org: Org, params: Record<string, unknown>, user: User = org.admin) =>
  as(user, org.host).post('/realm/profile_fields', params);

async function createField(
  org: Org,
  params: Record<string, unknown>,
  user: User = org.admin,
): Promise<number> {
  return expectSuccess(await create(org, params, user)).id as number;
}

const update = (org: Org, id: number, params: Record<string, unknown>, user: User = org.admin) =>
  as(user, org.host).patch(`/realm/profile_fields/${id}`, params);

const setOwn = (org: Org, user: User, data: unknown) =>
  as(user, org.host).patch('/users/me/profile_data', { data });

const removeOwn = (org: Org, user: User, data: unknown) =>
  as(user, org.host).delete('/users/me/profile_data', { data });

const CHOICES = {
  vim: { text: 'Vim', order: '1' },
  emacs: { text: 'Emacs', order: '2' },
};

async function profileOf(org: Org, user: User): Promise<Record<string, unknown>> {
  const me = expectSuccess(
    await as(org.member, org.host).get(`/users/${user.id}`, {
      include_custom_profile_fields: true,
    }),
  ).user as { profile_data: Record<string, unknown> };
  return me.profile_data;
}

function fieldEvents(published: Published[]) {
  return published.filter((p) => p.event.type === 'custom_profile_fields');
}

function valueEvents(published: Published[]) {
  return published
    .filter((p) => p.event.type === 'realm_user')
    .map((p) => p.event.person as Record<string, unknown>);
}

describe('GET /realm/profile_fields', () => {
  let org: Org;
  beforeAll(async () => {
    org = await createOrg();
  });

  it('lists the fields in their order for every kind of user, with only true flags present', async () => {
    expect(await list(org)).toEqual([]);
    const phone = await createField(org, { name: 'Phone', field_type: 1, hint: 'Work phone' });
    const editor = await createField(org, {
      name: 'Editor',
      field_type: 3,
      field_data: CHOICES,
      display_in_profile_summary: true,
      required: true,
      editable_by_user: false,
    });
    const expected = [
      {
        id: phone,
        name: 'Phone',
        type: 1,
        hint: 'Work phone',
        field_data: '',
        order: phone,
        required: false,
        editable_by_user: true,
      },
      {
        id: editor,
        name: 'Editor',
        type: 3,
        hint: '',
        field_data: JSON.stringify(CHOICES),
        order: editor,
        required: true,
        editable_by_user: false,
        display_in_profile_summary: true,
      },
    ];
    for (const user of [org.owner, org.admin, org.member, org.guest, org.bot])
      expect(await list(org, user)).toEqual(expected);
  });

  it('shows nothing of other organizations', async () => {
    const other = await createOrg();
    expect(await list(other)).toEqual([]);
  });
});

describe('POST /realm/profile_fields', () => {
  it('creates a field, answers its id and tells the whole organization the full list', async () => {
    const org = await createOrg();
    const first = await createField(org, { name: 'Team', field_type: 1 });
    let id = 0;
    const published = await captureEvents(org.realm.id, async () => {
      id = await createField(org, { name: '  Birthday  ', field_type: 4, hint: 'When?' });
    });
    const fields = await list(org);
    expect(fields.map((f) => [f.id, f.name, f.order])).toEqual([
      [first, 'Team', first],
      [id, 'Birthday', id],
    ]);
    expect(fieldEvents(published)).toEqual([
      { event: { type: 'custom_profile_fields', fields }, users: await everyone(org) },
    ]);
    expect(published).toHaveLength(1);
  });

  it('creates every type, storing field_data only for dropdowns and external accounts', async () => {
    const org = await createOrg();
    const types = [1, 2, 3, 4, 5, 6, 7, 8];
    for (const type of types)
      await createField(org, {
        name: `Type ${type}`,
        field_type: type,
        field_data:
          type === 3
            ? CHOICES
            : type === 7
              ? { subtype: 'custom', url_pattern: 'https://a.example/%(username)s' }
              : { ignored: 'x' },
      });
    const fields = await list(org);
    expect(fields.map((f) => [f.type, f.field_data])).toEqual([
      [1, ''],
      [2, ''],
      [3, JSON.stringify(CHOICES)],
      [4, ''],
      [5, ''],
      [6, ''],
      [7, JSON.stringify({ subtype: 'custom', url_pattern: 'https://a.example/%(username)s' })],
      [8, ''],
    ]);
  });

  it('takes name and hint of built-in external accounts from the subtype', async () => {
    const org = await createOrg();
    const github = await createField(org, {
      name: 'ignored',
      hint: 'ignored too',
      field_type: 7,
      field_data: { subtype: 'github' },
      required: true,
    });
    const mastodon = await createField(org, {
      field_type: 7,
      field_data: { subtype: 'mastodon' },
    });
    expect(await list(org)).toEqual([
      expect.objectContaining({
        id: github,
        name: 'GitHub username',
        hint: '',
        field_data: '{"subtype":"github"}',
        required: true,
      }),
      expect.objectContaining({
        id: mastodon,
        name: 'Mastodon profile',
        hint: 'The full URL to your profile',
        field_data: '{"subtype":"mastodon"}',
      }),
    ]);
    expectError(
      await create(org, { field_type: 7, field_data: { subtype: 'github' } }),
      'A field with that label already exists.',
    );
  });

  it('checks external-account field_data with Zulip’s messages', async () => {
    const org = await createOrg();
    const cases: [unknown, string][] = [
      [{}, 'subtype key is missing from field_data'],
      [{ subtype: '' }, 'field_data["subtype"] cannot be blank.'],
      [{ subtype: 5 }, 'field_data["subtype"] is not a string'],
      [{ subtype: 'myspace' }, 'Invalid external account type'],
      [
        { subtype: 'custom', url_pattern: 'https://a.example/' },
        "URL pattern must contain '%(username)s'.",
      ],
      [
        { subtype: 'custom', url_pattern: 'https://a.example/%(username)s/%(username)s' },
        "URL pattern must contain '%(username)s'.",
      ],
      [
        { subtype: 'custom', url_pattern: 'not a url %(username)s' },
        'field_data["url_pattern"] is not a URL',
      ],
      [{ subtype: 'custom', url_pattern: 7 }, 'field_data["url_pattern"] is not a string'],
      [{ subtype: 'custom', extra: 'x' }, 'Unexpected arguments: extra'],
    ];
    for (const [fieldData, message] of cases)
      expectError(
        await create(org, { name: 'Account', field_type: 7, field_data: fieldData }),
        message,
      );
    // A custom account needs no pattern (Zulip dropped that requirement).
    await createField(org, { name: 'Account', field_type: 7, field_data: { subtype: 'custom' } });
    expect(await list(org)).toHaveLength(1);
  });

  it('checks dropdown choices with Zulip’s messages', async () => {
    const org = await createOrg();
    const cases: [unknown, string][] = [
      [{}, 'Field must have at least one choice.'],
      [{ ' ': { text: 'A', order: '1' } }, "'value' cannot be blank."],
      [{ a: 'A' }, 'field_data is not a dict'],
      [{ a: { order: '1' } }, 'text key is missing from field_data'],
      [{ a: { text: 'A' } }, 'order key is missing from field_data'],
      [{ a: { text: ' ', order: '1' } }, 'field_data["text"] cannot be blank.'],
      [{ a: { text: 'A', order: 1 } }, 'field_data["order"] is not a string'],
      [{ a: { text: 'A', order: '1', color: 'red' } }, 'Unexpected arguments: color'],
      [
        { a: { text: 'A', order: '1' }, b: { text: 'A', order: '2' } },
        'Field must not have duplicate choices.',
      ],
    ];
    for (const [fieldData, message] of cases)
      expectError(
        await create(org, { name: 'Pick', field_type: 3, field_data: fieldData }),
        message,
      );
    // A dropdown without field_data has no choices.
    expectError(
      await create(org, { name: 'Pick', field_type: 3 }),
      'Field must have at least one choice.',
    );
    expect(await list(org)).toEqual([]);
  });

  it('refuses bad labels, hints and types', async () => {
    const org = await createOrg();
    expectError(await create(org, { field_type: 1 }), 'Label cannot be blank.');
    expectError(await create(org, { name: '   ', field_type: 1 }), 'Label cannot be blank.');
    expectError(
      await create(org, { name: 'x'.repeat(41), field_type: 1 }),
      'name is too long (limit: 40 characters)',
    );
    expectError(
      await create(org, { name: 'Hint', hint: 'h'.repeat(81), field_type: 1 }),
      'hint is too long (limit: 80 characters)',
    );
    expectError(await create(org, { name: 'Zero', field_type: 0 }), 'Invalid field type.');
    expectError(await create(org, { name: 'Nine', field_type: 9 }), 'Invalid field type.');
    expectError(
      await create(org, { name: 'Nine' }),
      "Missing 'field_type' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
    expectError(
      await create(org, { name: 'Nine', field_type: 'one' }),
      'field_type is not an integer',
    );
    expectError(
      await create(org, { name: 'Big', field_type: '99999999999' }),
      'field_type is too large',
    );
    expectError(
      await create(org, { name: 'Data', field_type: 3, field_data: '[1]' }),
      'field_data is not a dict',
    );
    expectError(
      await create(org, { name: 'Data', field_type: 3, field_data: '{' }),
      'field_data is not valid JSON',
    );
    expectError(
      await create(org, { name: 'Flag', field_type: 1, required: 'yes' }),
      'required is not a boolean',
    );
    expectError(
      await create(org, { name: 'Nul\u0000l', field_type: 1 }),
      'Invalid name: null bytes are not allowed',
    );
    // Lengths count characters, not UTF-16 units.
    await createField(org, { name: '🙂'.repeat(40), hint: '🙂'.repeat(80), field_type: 1 });
    await createField(org, { name: 'Unique', field_type: 1 });
    expectError(
      await create(org, { name: 'Unique', field_type: 2 }),
      'A field with that label already exists.',
    );
    expect(await list(org)).toHaveLength(2);
  });

  it('shows at most two fields in the profile summary, and never a users field', async () => {
    const org = await createOrg();
    expectError(
      await create(org, { name: 'People', field_type: 6, display_in_profile_summary: true }),
      'Field type not supported for display in profile summary.',
    );
    await createField(org, { name: 'Bio', field_type: 2, display_in_profile_summary: true });
    await createField(org, { name: 'Team', field_type: 1, display_in_profile_summary: true });
    expectError(
      await create(org, { name: 'Third', field_type: 1, display_in_profile_summary: true }),
      'Only 2 custom profile fields can be displayed in the profile summary.',
    );
    await createField(org, { name: 'Hidden', field_type: 1, display_in_profile_summary: false });
    expect((await list(org)).map((f) => f.display_in_profile_summary)).toEqual([
      true,
      true,
      undefined,
    ]);
  });

  it('holds the summary limit under concurrent requests', async () => {
    const org = await createOrg();
    const results = await Promise.all(
      [1, 2, 3, 4].map((n) =>
        create(org, { name: `Shown ${n}`, field_type: 1, display_in_profile_summary: true }),
      ),
    );
    expect(results.filter((res) => res.status === 200)).toHaveLength(2);
    expect((await list(org)).filter((f) => f.display_in_profile_summary)).toHaveLength(2);
  });

  it('allows use_for_user_matching for short text and external accounts only', async () => {
    const org = await createOrg();
    for (const type of [2, 3, 4, 5, 6, 8])
      expectError(
        await create(org, {
          name: `Match ${type}`,
          field_type: type,
          field_data: type === 3 ? CHOICES : {},
          use_for_user_matching: true,
        }),
        'Field type not supported for user matching.',
      );
    const text = await createField(org, {
      name: 'Nick',
      field_type: 1,
      use_for_user_matching: true,
    });
    const account = await createField(org, {
      field_type: 7,
      field_data: { subtype: 'x' },
      use_for_user_matching: true,
    });
    const plain = await createField(org, { name: 'Plain', field_type: 1 });
    const fields = await list(org);
    expect(fields.map((f) => [f.id, f.use_for_user_matching])).toEqual([
      [text, true],
      [account, true],
      [plain, undefined],
    ]);
    expect(fields[2]).not.toHaveProperty('use_for_user_matching');
  });

  it('is for administrators only', async () => {
    const org = await createOrg();
    for (const user of [org.member, org.guest, org.bot])
      expectError(
        await create(org, { name: 'Nope', field_type: 1 }, user),
        'Must be an organization administrator',
        400,
        'UNAUTHORIZED_PRINCIPAL',
      );
    await createField(org, { name: 'Owner made', field_type: 1 }, org.owner);
    expect((await list(org)).map((f) => f.name)).toEqual(['Owner made']);
  });
});

describe('PATCH /realm/profile_fields/{field_id}', () => {
  it('changes what it is given and tells the organization', async () => {
    const org = await createOrg();
    const id = await createField(org, { name: 'Team', field_type: 1, hint: 'Which team' });
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await update(org, id, {
          name: ' Squad ',
          required: true,
          editable_by_user: false,
          display_in_profile_summary: true,
          use_for_user_matching: true,
        }),
      );
    });
    const fields = await list(org);
    expect(fields).toEqual([
      {
        id,
        name: 'Squad',
        type: 1,
        hint: 'Which team',
        field_data: '',
        order: id,
        required: true,
        editable_by_user: false,
        display_in_profile_summary: true,
        use_for_user_matching: true,
      },
    ]);
    expect(published).toEqual([
      { event: { type: 'custom_profile_fields', fields }, users: await everyone(org) },
    ]);
    expectSuccess(
      await update(org, id, {
        hint: '',
        display_in_profile_summary: false,
        use_for_user_matching: false,
      }),
    );
    expect((await list(org))[0]).toEqual(
      expect.not.objectContaining({ display_in_profile_summary: expect.anything() }),
    );
    expect((await list(org))[0]!.hint).toBe('');
  });

  it('answers unknown fields and those of other organizations with Zulip’s message', async () => {
    const org = await createOrg();
    const other = await createOrg();
    const foreign = await createField(other, { name: 'Theirs', field_type: 1 });
    expectError(await update(org, foreign, { name: 'Mine' }), `Field id ${foreign} not found.`);
    expectError(await update(org, 2147483647, { name: 'Mine' }), 'Field id 2147483647 not found.');
    expectError(await update(org, 2147483648, { name: 'Mine' }), 'field_id is too large');
    expect((await list(other)).map((f) => f.name)).toEqual(['Theirs']);
  });

  it('validates the result as creation does', async () => {
    const org = await createOrg();
    const id = await createField(org, { name: 'Team', field_type: 1 });
    const select = await createField(org, { name: 'Editor', field_type: 3, field_data: CHOICES });
    const date = await createField(org, { name: 'Date', field_type: 4 });
    expectError(await update(org, id, { name: '  ' }), 'Label cannot be blank.');
    expectError(
      await update(org, id, { name: 'Editor' }),
      'A field with that label already exists.',
    );
    expectError(
      await update(org, id, { name: 'n'.repeat(41) }),
      'name is too long (limit: 40 characters)',
    );
    expectError(
      await update(org, id, { hint: 'h'.repeat(81) }),
      'hint is too long (limit: 80 characters)',
    );
    expectError(
      await update(org, select, { field_data: {} }),
      'Field must have at least one choice.',
    );
    expectError(
      await update(org, date, { use_for_user_matching: true }),
      'Field type not supported for user matching.',
    );
    expectError(await update(org, id, { required: 'maybe' }), 'required is not a boolean');
    expect((await list(org)).map((f) => f.name)).toEqual(['Team', 'Editor', 'Date']);
  });

  it('keeps the summary limit, counting the field itself once', async () => {
    const org = await createOrg();
    const a = await createField(org, {
      name: 'A',
      field_type: 1,
      display_in_profile_summary: true,
    });
    await createField(org, { name: 'B', field_type: 1, display_in_profile_summary: true });
    const c = await createField(org, { name: 'C', field_type: 1 });
    const people = await createField(org, { name: 'People', field_type: 6 });
    expectSuccess(await update(org, a, { display_in_profile_summary: true, name: 'A2' }));
    expectError(
      await update(org, c, { display_in_profile_summary: true }),
      'Only 2 custom profile fields can be displayed in the profile summary.',
    );
    expectSuccess(await update(org, a, { display_in_profile_summary: false }));
    expectError(
      await update(org, people, { display_in_profile_summary: true }),
      'Field type not supported for display in profile summary.',
    );
    expectSuccess(await update(org, c, { display_in_profile_summary: true }));
  });

  it('gives a custom external account made built-in the subtype name and hint', async () => {
    const org = await createOrg();
    const id = await createField(org, {
      field_type: 7,
      name: 'Code host',
      field_data: { subtype: 'custom', url_pattern: 'https://code.example/%(username)s' },
    });
    // Neither the over-long name nor the blank one is checked or kept: the subtype's win.
    expectSuccess(
      await update(org, id, { name: 'x'.repeat(300), field_data: { subtype: 'github' } }),
    );
    expect(await list(org)).toEqual([
      expect.objectContaining({ id, name: 'GitHub username', field_data: '{"subtype":"github"}' }),
    ]);
  });

  it('lets built-in external accounts change only their display and permissions', async () => {
    const org = await createOrg();
    const id = await createField(org, { field_type: 7, field_data: { subtype: 'github' } });
    for (const change of [
      { name: 'Code' },
      { hint: 'Your handle' },
      { field_data: { subtype: 'gitlab' } },
      { field_data: { subtype: 'custom', url_pattern: 'https://g.example/%(username)s' } },
    ])
      expectError(await update(org, id, change), 'Default custom field cannot be updated.');
    // Sending the current values is no change.
    expectSuccess(
      await update(org, id, {
        name: 'GitHub username',
        hint: '',
        field_data: { subtype: 'github' },
        display_in_profile_summary: true,
        required: true,
        editable_by_user: false,
      }),
    );
    expect(await list(org)).toEqual([
      expect.objectContaining({
        name: 'GitHub username',
        field_data: '{"subtype":"github"}',
        display_in_profile_summary: true,
        required: true,
        editable_by_user: false,
      }),
    ]);
  });

  it('changes a custom external account’s pattern', async () => {
    const org = await createOrg();
    const id = await createField(org, {
      name: 'Wiki',
      field_type: 7,
      field_data: { subtype: 'custom', url_pattern: 'https://wiki.example/%(username)s' },
    });
    expectError(
      await update(org, id, {
        field_data: { subtype: 'custom', url_pattern: 'https://x.example' },
      }),
      "URL pattern must contain '%(username)s'.",
    );
    expectSuccess(
      await update(org, id, {
        field_data: { subtype: 'custom', url_pattern: 'https://w.example/u/%(username)s' },
      }),
    );
    expect((await list(org))[0]!.field_data).toBe(
      JSON.stringify({ subtype: 'custom', url_pattern: 'https://w.example/u/%(username)s' }),
    );
  });

  it('removes values naming a dropped choice and tells those who see the users', async () => {
    const org = await createOrg();
    const id = await createField(org, { name: 'Editor', field_type: 3, field_data: CHOICES });
    expectSuccess(await setOwn(org, org.member, [{ id, value: 'emacs' }]));
    expectSuccess(await setOwn(org, org.admin, [{ id, value: 'vim' }]));
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await update(org, id, {
          field_data: { vim: CHOICES.vim, nano: { text: 'Nano', order: '3' } },
        }),
      );
    });
    expect(valueEvents(published)).toEqual([
      { user_id: org.member.id, custom_profile_field: { id, value: null } },
    ]);
    expect(await profileOf(org, org.member)).toEqual({});
    expect(await profileOf(org, org.admin)).toEqual({ [id]: { value: 'vim' } });
    expect(fieldEvents(published)).toHaveLength(1);
    expect(published.find((p) => p.event.type === 'realm_user')!.users).toContain(org.guest.id);

    // A guest who may see only the people they share something with hears nothing of others.
    await setGuestAccess(org);
    expectSuccess(await setOwn(org, org.admin, [{ id, value: 'nano' }]));
    const limited = await captureEvents(org.realm.id, async () => {
      expectSuccess(await update(org, id, { field_data: { vim: CHOICES.vim } }));
    });
    const cleared = limited.filter((p) => p.event.type === 'realm_user');
    expect(cleared.map((p) => p.event.person)).toEqual([
      { user_id: org.admin.id, custom_profile_field: { id, value: null } },
    ]);
    expect(cleared[0]!.users).toContain(org.member.id);
    expect(cleared[0]!.users).not.toContain(org.guest.id);
  });

  it('ignores field_data for types that have none', async () => {
    const org = await createOrg();
    const id = await createField(org, { name: 'Team', field_type: 1 });
    expectSuccess(await update(org, id, { field_data: { a: 'b' } }));
    expect((await list(org))[0]!.field_data).toBe('');
  });

  it('is for administrators only', async () => {
    const org = await createOrg();
    const id = await createField(org, { name: 'Team', field_type: 1 });
    expectError(
      await update(org, id, { name: 'Mine' }, org.member),
      'Must be an organization administrator',
      400,
      'UNAUTHORIZED_PRINCIPAL',
    );
    expect((await list(org))[0]!.name).toBe('Team');
  });
});

describe('DELETE /realm/profile_fields/{field_id}', () => {
  it('removes the field with everyone’s values and tells the organization', async () => {
    const org = await createOrg();
    const keep = await createField(org, { name: 'Keep', field_type: 1 });
    const id = await createField(org, { name: 'Team', field_type: 1 });
    expectSuccess(
      await setOwn(org, org.member, [
        { id, value: 'Blue' },
        { id: keep, value: 'k' },
      ]),
    );
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await as(org.admin, org.host).delete(`/realm/profile_fields/${id}`));
    });
    const fields = await list(org);
    expect(fields.map((f) => f.id)).toEqual([keep]);
    expect(published).toEqual([
      { event: { type: 'custom_profile_fields', fields }, users: await everyone(org) },
    ]);
    expect(await prisma().customProfileFieldValue.count({ where: { fieldId: id } })).toBe(0);
    expect(await profileOf(org, org.member)).toEqual({
      [keep]: { value: 'k', rendered_value: '<p>k</p>' },
    });
    expectError(
      await as(org.admin, org.host).delete(`/realm/profile_fields/${id}`),
      `Field id ${id} not found.`,
    );
  });

  it('refuses other organizations’ fields and non-administrators', async () => {
    const org = await createOrg();
    const other = await createOrg();
    const foreign = await createField(other, { name: 'Theirs', field_type: 1 });
    expectError(
      await as(org.admin, org.host).delete(`/realm/profile_fields/${foreign}`),
      `Field id ${foreign} not found.`,
    );
    expectError(
      await as(other.member, other.host).delete(`/realm/profile_fields/${foreign}`),
      'Must be an organization administrator',
      400,
      'UNAUTHORIZED_PRINCIPAL',
    );
    expectError(
      await as(org.admin, org.host).delete('/realm/profile_fields/abc'),
      'field_id is not an integer',
    );
    expect(await list(other)).toHaveLength(1);
  });
});

describe('PATCH /realm/profile_fields (reorder)', () => {
  it('puts every field at its position in the list and tells the organization', async () => {
    const org = await createOrg();
    const a = await createField(org, { name: 'A', field_type: 1 });
    const b = await createField(org, { name: 'B', field_type: 1 });
    const c = await createField(org, { name: 'C', field_type: 1 });
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await as(org.admin, org.host).patch('/realm/profile_fields', { order: [c, a, b] }),
      );
    });
    const fields = await list(org);
    expect(fields.map((f) => [f.id, f.order])).toEqual([
      [c, 0],
      [a, 1],
      [b, 2],
    ]);
    expect(published).toEqual([
      { event: { type: 'custom_profile_fields', fields }, users: await everyone(org) },
    ]);
  });

  it('needs every field, and checks the list', async () => {
    const org = await createOrg();
    const a = await createField(org, { name: 'A', field_type: 1 });
    const b = await createField(org, { name: 'B', field_type: 1 });
    const reorder = (order: unknown) =>
      as(org.admin, org.host).patch('/realm/profile_fields', { order });
    expectError(await reorder([a]), 'Invalid order mapping.');
    expectError(await reorder([]), 'Invalid order mapping.');
    expectError(await reorder({ a }), 'order is not a list');
    expectError(await reorder(['a', b]), 'order[0] is not an integer');
    expectError(
      await as(org.admin, org.host).patch('/realm/profile_fields'),
      "Missing 'order' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
    expect((await list(org)).map((f) => f.id)).toEqual([a, b]);
    // Unknown ids are ignored, as Zulip does.
    expectSuccess(await reorder([b, 999999999, a]));
    expect((await list(org)).map((f) => f.id)).toEqual([b, a]);
  });
});

describe('PATCH /users/me/profile_data', () => {
  let org: Org;
  const ids: Record<string, number> = {};
  beforeAll(async () => {
    org = await createOrg();
    ids.short = await createField(org, { name: 'Short', field_type: 1 });
    ids.long = await createField(org, { name: 'Long', field_type: 2 });
    ids.select = await createField(org, { name: 'Select', field_type: 3, field_data: CHOICES });
    ids.date = await createField(org, { name: 'Date', field_type: 4 });
    ids.url = await createField(org, { name: 'Url', field_type: 5 });
    ids.users = await createField(org, { name: 'Users', field_type: 6 });
    ids.account = await createField(org, { field_type: 7, field_data: { subtype: 'github' } });
    ids.pronouns = await createField(org, { name: 'Pronouns', field_type: 8 });
    ids.locked = await createField(org, { name: 'Locked', field_type: 1, editable_by_user: false });
  });

  it('sets values of every type, rendering Markdown, and tells everyone who sees the user', async () => {
    const user = await createTestUser(org.realm, Role.MEMBER);
    const data = [
      { id: ids.short, value: 'Short *text*' },
      { id: ids.long, value: 'Long **text**' },
      { id: ids.select, value: 'vim' },
      { id: ids.date, value: '2024-02-29' },
      { id: ids.url, value: 'https://example.com/me' },
      { id: ids.users, value: [org.admin.id, org.member.id] },
      { id: ids.account, value: 'octocat' },
      { id: ids.pronouns, value: 'they/them' },
    ];
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await setOwn(org, user, data));
    });
    const users = await everyone(org);
    expect(published.every((p) => JSON.stringify(p.users) === JSON.stringify(users))).toBe(true);
    expect(valueEvents(published)).toEqual([
      {
        user_id: user.id,
        custom_profile_field: {
          id: ids.short,
          value: 'Short *text*',
          rendered_value: '<p>Short <em>text</em></p>',
        },
      },
      {
        user_id: user.id,
        custom_profile_field: {
          id: ids.long,
          value: 'Long **text**',
          rendered_value: '<p>Long <strong>text</strong></p>',
        },
      },
      { user_id: user.id, custom_profile_field: { id: ids.select, value: 'vim' } },
      { user_id: user.id, custom_profile_field: { id: ids.date, value: '2024-02-29' } },
      { user_id: user.id, custom_profile_field: { id: ids.url, value: 'https://example.com/me' } },
      {
        user_id: user.id,
        custom_profile_field: {
          id: ids.users,
          value: JSON.stringify([org.admin.id, org.member.id]),
        },
      },
      { user_id: user.id, custom_profile_field: { id: ids.account, value: 'octocat' } },
      { user_id: user.id, custom_profile_field: { id: ids.pronouns, value: 'they/them' } },
    ]);
    expect(await profileOf(org, user)).toEqual({
      [ids.short!]: { value: 'Short *text*', rendered_value: '<p>Short <em>text</em></p>' },
      [ids.long!]: { value: 'Long **text**', rendered_value: '<p>Long <strong>text</strong></p>' },
      [ids.select!]: { value: 'vim' },
      [ids.date!]: { value: '2024-02-29' },
      [ids.url!]: { value: 'https://example.com/me' },
      [ids.users!]: { value: JSON.stringify([org.admin.id, org.member.id]) },
      [ids.account!]: { value: 'octocat' },
      [ids.pronouns!]: { value: 'they/them' },
    });
    const me = expectSuccess(await as(user, org.host).get('/users/me')) as {
      profile_data: Record<string, unknown>;
    };
    expect(me.profile_data).toEqual(await profileOf(org, user));

    // The same values again change nothing and tell no one; a new one tells of itself only.
    const again = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await setOwn(org, user, [...data.slice(0, 2), { id: ids.pronouns, value: 'she/her' }]),
      );
    });
    expect(valueEvents(again)).toEqual([
      { user_id: user.id, custom_profile_field: { id: ids.pronouns, value: 'she/her' } },
    ]);
  });

  it('refuses bad values with Zulip’s messages and writes nothing', async () => {
    const user = await createTestUser(org.realm, Role.MEMBER);
    const deactivated = await createTestUser(org.realm, Role.MEMBER);
    await prisma().user.update({ where: { id: deactivated.id }, data: { isActive: false } });
    const other = await createOrg();
    const cases: [unknown, string][] = [
      [[{ id: ids.short, value: 'x'.repeat(51) }], 'Short is too long (limit: 50 characters)'],
      [[{ id: ids.long, value: 'x'.repeat(501) }], 'Long is too long (limit: 500 characters)'],
      [
        [{ id: ids.account, value: 'x'.repeat(51) }],
        'GitHub username is too long (limit: 50 characters)',
      ],
      [
        [{ id: ids.pronouns, value: 'x'.repeat(51) }],
        'Pronouns is too long (limit: 50 characters)',
      ],
      [[{ id: ids.short, value: [1] }], 'Short is not a string'],
      [[{ id: ids.select, value: 'nano' }], "'nano' is not a valid choice for 'Select'."],
      [[{ id: ids.select, value: '' }], "'' is not a valid choice for 'Select'."],
      [[{ id: ids.date, value: '2023-02-29' }], 'Date is not a date'],
      [[{ id: ids.date, value: '2023-2-28' }], 'Date is not a date'],
      [[{ id: ids.date, value: '0000-01-01' }], 'Date is not a date'],
      [[{ id: ids.url, value: 'javascript:alert(1)' }], 'Url is not a URL'],
      [[{ id: ids.url, value: 'https://nodot' }], 'Url is not a URL'],
      [[{ id: ids.url, value: 'https://exa mple.com' }], 'Url is not a URL'],
      [[{ id: ids.url, value: `https://example.com/${'a'.repeat(2048)}` }], 'Url is not a URL'],
      [[{ id: ids.users, value: 'me' }], 'User IDs is not a list'],
      [
        [{ id: ids.users, value: [999999999, org.admin.id, 5e9] }],
        'Invalid user IDs: 999999999, 5000000000',
      ],
      [[{ id: ids.users, value: [other.member.id] }], `Invalid user IDs: ${other.member.id}`],
      [
        [{ id: ids.users, value: [deactivated.id] }],
        `User with ID ${deactivated.id} is deactivated`,
      ],
      [[{ id: ids.users, value: [org.bot.id] }], `User with ID ${org.bot.id} is a bot`],
      [[{ id: 999999999, value: 'x' }], 'Field id 999999999 not found.'],
      [[{ id: 99999999999, value: 'x' }], 'Field id 99999999999 not found.'],
      [
        [
          { id: ids.short, value: 'ok' },
          { id: ids.date, value: 'soon' },
        ],
        'Date is not a date',
      ],
      [[{ id: ids.short }], "data[0]['value'] field is missing"],
      [[{ value: 'x' }], "data[0]['id'] field is missing"],
      [[{ id: ids.short, value: null }], "Invalid data[0]['value']"],
      [[{ id: ids.short, value: 5 }], "Invalid data[0]['value']"],
      [[{ id: 'a', value: 'x' }], "data[0]['id'] is not an integer"],
      [{ id: ids.short, value: 'x' }, 'data is not a list'],
      [[{ id: ids.short, value: 'nul\u0000' }], 'Invalid data: null bytes are not allowed'],
    ];
    for (const [data, message] of cases) expectError(await setOwn(org, user, data), message);
    expectError(
      await as(user, org.host).patch('/users/me/profile_data', { data: '[' }),
      'data is not valid JSON',
    );
    expectError(
      await as(user, org.host).patch('/users/me/profile_data'),
      "Missing 'data' argument",
      400,
      'REQUEST_VARIABLE_MISSING',
    );
    expect(await prisma().customProfileFieldValue.count({ where: { userId: user.id } })).toBe(0);
  });

  it('stores what Zulip stores: empty text, duplicates in user lists', async () => {
    const user = await createTestUser(org.realm, Role.MEMBER);
    expectSuccess(
      await setOwn(org, user, [
        { id: ids.short, value: '' },
        { id: ids.users, value: [org.admin.id, org.admin.id] },
      ]),
    );
    expect(await profileOf(org, user)).toEqual({
      [ids.short!]: { value: '', rendered_value: '' },
      [ids.users!]: { value: JSON.stringify([org.admin.id, org.admin.id]) },
    });
  });

  it('leaves fields not editable by users to administrators', async () => {
    const user = await createTestUser(org.realm, Role.MEMBER);
    expectError(
      await setOwn(org, user, [{ id: ids.locked, value: 'mine' }]),
      'You are not allowed to change this field. Contact an administrator to update it.',
    );
    expectError(
      await removeOwn(org, user, [ids.locked]),
      'You are not allowed to change this field. Contact an administrator to update it.',
    );
    expectSuccess(await setOwn(org, org.admin, [{ id: ids.locked, value: 'admin set' }]));
    expectSuccess(
      await as(org.admin, org.host).patch(`/users/${user.id}`, {
        profile_data: [{ id: ids.locked, value: 'set for you' }],
      }),
    );
    expect(await profileOf(org, user)).toEqual({
      [ids.locked!]: { value: 'set for you', rendered_value: '<p>set for you</p>' },
    });
  });

  it('is for people, not bots', async () => {
    expectError(
      await setOwn(org, org.bot, [{ id: ids.short, value: 'beep' }]),
      'This endpoint does not accept bot requests.',
    );
    expectError(
      await removeOwn(org, org.bot, [ids.short]),
      'This endpoint does not accept bot requests.',
    );
  });
});

describe('DELETE /users/me/profile_data', () => {
  it('removes the values and tells everyone who sees the user; absent values are no change', async () => {
    const org = await createOrg();
    const team = await createField(org, { name: 'Team', field_type: 1 });
    const date = await createField(org, { name: 'Date', field_type: 4 });
    expectSuccess(await setOwn(org, org.member, [{ id: team, value: 'Blue' }]));
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(await removeOwn(org, org.member, [team, date]));
    });
    expect(published).toEqual([
      {
        event: {
          type: 'realm_user',
          op: 'update',
          person: { user_id: org.member.id, custom_profile_field: { id: team, value: null } },
        },
        users: await everyone(org),
      },
    ]);
    expect(await profileOf(org, org.member)).toEqual({});
    expect(
      await captureEvents(org.realm.id, async () => {
        expectSuccess(await removeOwn(org, org.member, [team]));
      }),
    ).toEqual([]);
  });

  it('answers unknown fields and bad lists, removing nothing', async () => {
    const org = await createOrg();
    const other = await createOrg();
    const team = await createField(org, { name: 'Team', field_type: 1 });
    const foreign = await createField(other, { name: 'Theirs', field_type: 1 });
    expectSuccess(await setOwn(org, org.member, [{ id: team, value: 'Blue' }]));
    expectError(
      await removeOwn(org, org.member, [team, foreign]),
      `Field id ${foreign} not found.`,
    );
    expectError(await removeOwn(org, org.member, team), 'data is not a list');
    expectError(await removeOwn(org, org.member, ['x']), 'data[0] is not an integer');
    expect(await profileOf(org, org.member)).toEqual({
      [team]: { value: 'Blue', rendered_value: '<p>Blue</p>' },
    });
  });
});

describe('PATCH /users/{user_id} profile_data', () => {
  it('clears values sent as null, empty text or an empty list', async () => {
    const org = await createOrg();
    const team = await createField(org, { name: 'Team', field_type: 1 });
    const people = await createField(org, { name: 'People', field_type: 6 });
    const date = await createField(org, { name: 'Date', field_type: 4 });
    const patch = (profileData: unknown) =>
      as(org.admin, org.host).patch(`/users/${org.member.id}`, { profile_data: profileData });
    expectSuccess(
      await patch([
        { id: team, value: 'Blue' },
        { id: people, value: [org.owner.id] },
        { id: date, value: '2020-01-01' },
      ]),
    );
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await patch([
          { id: team, value: '' },
          { id: people, value: [] },
          { id: date, value: null },
        ]),
      );
    });
    expect(valueEvents(published)).toEqual(
      [team, people, date].map((id) => ({
        user_id: org.member.id,
        custom_profile_field: { id, value: null },
      })),
    );
    expect(await profileOf(org, org.member)).toEqual({});
    expectError(await patch([{ id: 999999999, value: null }]), 'Field id 999999999 not found.');
    expectError(await patch([{ id: date, value: 'later' }]), 'Date is not a date');
  });

  it('sets values by email address too', async () => {
    const org = await createOrg();
    const team = await createField(org, { name: 'Team', field_type: 1 });
    expectSuccess(
      await as(org.owner, org.host).patch(
        `/users/${encodeURIComponent(org.member.deliveryEmail)}`,
        {
          profile_data: [{ id: team, value: 'Red' }],
        },
      ),
    );
    expect(await profileOf(org, org.member)).toEqual({
      [team]: { value: 'Red', rendered_value: '<p>Red</p>' },
    });
  });
});

describe('the register state', () => {
  const options = { linkifierUrlTemplate: true } as StateOptions;
  const register = async (org: Org, user: User) =>
    expectSuccess(
      await as(user, org.host).post('/register', {
        fetch_event_types: ['custom_profile_fields', 'realm_user'],
      }),
    ) as Record<string, unknown>;

  it('carries the same field objects as GET /realm/profile_fields, and the field types', async () => {
    const org = await createOrg();
    await createField(org, { name: 'Team', field_type: 1, display_in_profile_summary: true });
    await createField(org, {
      field_type: 7,
      field_data: { subtype: 'x' },
      use_for_user_matching: true,
    });
    const state = await register(org, org.member);
    expect(state.custom_profile_fields).toEqual(await list(org));
    expect(state.custom_profile_field_types).toEqual({
      SHORT_TEXT: { id: 1, name: 'Text (short)' },
      LONG_TEXT: { id: 2, name: 'Text (long)' },
      SELECT: { id: 3, name: 'List of options' },
      DATE: { id: 4, name: 'Date' },
      URL: { id: 5, name: 'Link' },
      USER: { id: 6, name: 'Users' },
      EXTERNAL_ACCOUNT: { id: 7, name: 'External account' },
      PRONOUNS: { id: 8, name: 'Pronouns' },
    });
  });

  it('becomes the fresh state when the events of a change are applied to it', async () => {
    const org = await createOrg();
    const team = await createField(org, { name: 'Team', field_type: 1 });
    const gone = await createField(org, { name: 'Gone', field_type: 2 });
    expectSuccess(await setOwn(org, org.member, [{ id: gone, value: 'bye' }]));
    const state = await register(org, org.member);
    const published = await captureEvents(org.realm.id, async () => {
      await createField(org, { name: 'New', field_type: 4 });
      expectSuccess(await update(org, team, { name: 'Squad', required: true }));
      expectSuccess(await setOwn(org, org.member, [{ id: team, value: '*Blue*' }]));
      expectSuccess(await as(org.admin, org.host).delete(`/realm/profile_fields/${gone}`));
    });
    for (const [index, { event }] of published.entries())
      applyEvent(state, { id: index, ...event } as QueuedEvent, org.member, options);
    const fresh = await register(org, org.member);
    expect(state.custom_profile_fields).toEqual(fresh.custom_profile_fields);
    const profileIn = (s: Record<string, unknown>) =>
      (s.realm_users as { user_id: number; profile_data: unknown }[]).find(
        (u) => u.user_id === org.member.id,
      )!.profile_data;
    expect(profileIn(state)).toEqual(profileIn(fresh));
    expect(profileIn(fresh)).toEqual({
      [team]: { value: '*Blue*', rendered_value: '<p><em>Blue</em></p>' },
    });
  });
});

// ---- Permission matrix -------------------------------------------------------------------

/** Fields made for a case, by the case's target user. */
const fieldOf = new Map<number, number>();

/** Zulip's require_realm_admin answers UNAUTHORIZED_PRINCIPAL: checked here, then handed to
 * the runner in the BAD_REQUEST form it compares. */
function adminOnly(
  run: (ctx: MatrixContext, actor: User, target: User) => Promise<Response>,
): Operation['run'] {
  return async (ctx, actor, target) => {
    const res = await run(ctx, actor, target);
    if (actor.role > Role.ADMINISTRATOR) {
      expect(res.body.code).toBe('UNAUTHORIZED_PRINCIPAL');
      res.body.code = 'BAD_REQUEST';
    }
    return res;
  };
}

async function prepareField({ org }: MatrixContext, target: User): Promise<void> {
  const field = await prisma().customProfileField.create({
    data: { realmId: org.realm.id, name: `Field ${target.id}`, fieldType: 1 },
  });
  fieldOf.set(target.id, field.id);
}

const operations: Operation[] = [
  {
    name: 'create a custom profile field',
    allowed: ['owner', 'admin'],
    deniedMsg: 'Must be an organization administrator',
    run: adminOnly(({ org }, actor, target) =>
      as(actor, org.host).post('/realm/profile_fields', {
        name: `New ${target.id}`,
        field_type: 1,
      }),
    ),
  },
  {
    name: 'update a custom profile field',
    allowed: ['owner', 'admin'],
    deniedMsg: 'Must be an organization administrator',
    prepare: prepareField,
    run: adminOnly(({ org }, actor, target) =>
      as(actor, org.host).patch(`/realm/profile_fields/${fieldOf.get(target.id)!}`, {
        name: `Renamed ${target.id}`,
      }),
    ),
  },
  {
    name: 'delete a custom profile field',
    allowed: ['owner', 'admin'],
    deniedMsg: 'Must be an organization administrator',
    prepare: prepareField,
    run: adminOnly(({ org }, actor, target) =>
      as(actor, org.host).delete(`/realm/profile_fields/${fieldOf.get(target.id)!}`),
    ),
  },
  {
    name: 'reorder custom profile fields',
    allowed: ['owner', 'admin'],
    deniedMsg: 'Must be an organization administrator',
    prepare: prepareField,
    run: adminOnly(async ({ org }, actor) => {
      const fields = await prisma().customProfileField.findMany({
        where: { realmId: org.realm.id },
        orderBy: [{ order: 'asc' }, { id: 'asc' }],
      });
      return as(actor, org.host).patch('/realm/profile_fields', {
        order: fields.map((field) => field.id).reverse(),
      });
    }),
  },
];

permissionMatrix('permission matrix: custom profile fields', operations, {
  setup: async ({ org }) => {
    await prisma().customProfileField.create({
      data: { realmId: org.realm.id, name: 'Matrix base', fieldType: 1 },
    });
  },
  snapshot: async ({ org }) => ({
    fields: await prisma().customProfileField.findMany({
      where: { realmId: org.realm.id },
      orderBy: { id: 'asc' },
    }),
    values: await prisma().customProfileFieldValue.findMany({
      where: { field: { realmId: org.realm.id } },
      orderBy: { id: 'asc' },
    }),
  }),
});
