// PATCH /realm/user_settings_defaults (Zulip's update_realm_user_settings_defaults): the
// personal settings new members start with, the events and audit entries, /register, and that
// existing members keep their own.
import { getPrisma, Role } from '@parley/db';
import {
  as,
  captureEvents,
  createTestRealm,
  createTestUser,
  expectError,
  expectSuccess,
  type TestRealm,
} from './helpers';

const prisma = () => getPrisma();

describe('PATCH /realm/user_settings_defaults', () => {
  let org: TestRealm;
  beforeAll(async () => {
    org = await createTestRealm();
  });

  const patch = (form: Record<string, unknown>, user = org.owner) =>
    as(user, org.host).patch('/realm/user_settings_defaults', form);
  const defaults = async () =>
    expectSuccess(
      await as(org.owner, org.host, { atOnce: true }).post('/register', {
        fetch_event_types: ['realm_user_settings_defaults'],
      }),
    ).realm_user_settings_defaults as Record<string, unknown>;

  it('changes what new members start with, and tells everyone', async () => {
    const before = await defaults();
    expect(before).toMatchObject({
      enter_sends: false,
      web_home_view: 'inbox',
      email_address_visibility: 1,
    });
    const existing = await createTestUser(org.realm, Role.MEMBER);
    const everyone = (
      await prisma().user.findMany({
        where: { realmId: org.realm.id, isActive: true },
        orderBy: { id: 'asc' },
      })
    ).map((user) => user.id);
    const published = await captureEvents(org.realm.id, async () => {
      expectSuccess(
        await patch({
          enter_sends: true,
          web_home_view: 'recent',
          email_address_visibility: 3,
          twenty_four_hour_time: false,
        }),
      );
    });
    // One event per setting that changed (twenty_four_hour_time already was false), in the
    // order of Zulip's parameters.
    expect(published).toEqual(
      [
        ['email_address_visibility', 3],
        ['enter_sends', true],
        ['web_home_view', 'recent'],
      ].map(([property, value]) => ({
        event: { type: 'realm_user_settings_defaults', op: 'update', property, value },
        users: everyone,
      })),
    );
    expect(await defaults()).toEqual({
      ...before,
      enter_sends: true,
      web_home_view: 'recent',
      email_address_visibility: 3,
    });
    const audit = await prisma().auditLog.findMany({
      where: { realmId: org.realm.id, eventType: 216 },
      orderBy: { id: 'asc' },
    });
    expect(audit.map((row) => row.extraData)).toEqual([
      { old_value: 1, new_value: 3, property: 'email_address_visibility' },
      { old_value: false, new_value: true, property: 'enter_sends' },
      { old_value: 'inbox', new_value: 'recent', property: 'web_home_view' },
    ]);

    // A new member starts with them; an existing one keeps theirs.
    const created = expectSuccess(
      await as(org.owner, org.host).post('/users', {
        email: 'newcomer@example.com',
        password: 'correct horse',
        full_name: 'New Comer',
      }),
    );
    const newcomer = await prisma().user.findUniqueOrThrow({
      where: { id: created.user_id as number },
    });
    expect(newcomer).toMatchObject({
      enterSends: true,
      webHomeView: 'recent',
      emailAddressVisibility: 3,
    });
    expect(await prisma().user.findUniqueOrThrow({ where: { id: existing.id } })).toMatchObject({
      enterSends: false,
      webHomeView: 'inbox',
    });
    // Back to Zulip's default: no longer stored as a change.
    expectSuccess(await patch({ enter_sends: false }));
    expect((await defaults()).enter_sends).toBe(false);
    expect(
      (await prisma().realm.findUniqueOrThrow({ where: { id: org.realm.id } }))
        .userSettingsDefaults,
    ).toEqual({ web_home_view: 'recent' });
    // Bots are not people: they keep Zulip's defaults.
    const bot = expectSuccess(
      await as(org.owner, org.host).post('/bots', { full_name: 'Helper', short_name: 'helper' }),
    );
    expect(
      await prisma().user.findUniqueOrThrow({ where: { id: bot.user_id as number } }),
    ).toMatchObject({ webHomeView: 'inbox', emailAddressVisibility: 1 });
  });

  it('refuses bad values, settings that stay personal, and anyone but administrators', async () => {
    const before = await defaults();
    expectError(
      await patch({ notification_sound: 'trumpet' }),
      "Invalid notification sound 'trumpet'",
    );
    expectError(await patch({ user_list_style: 7 }), 'Invalid user_list_style');
    expectError(await patch({ enter_sends: 'sometimes' }), 'enter_sends is not a boolean');
    expectError(await patch({ web_home_view: 'feed' }), 'Invalid web_home_view');
    const personal = expectSuccess(
      await patch({ timezone: 'Europe/Paris', default_language: 'fr' }),
    );
    expect(personal.ignored_parameters_unsupported).toEqual(['default_language', 'timezone']);
    expect(await defaults()).toEqual(before);
    const member = await createTestUser(org.realm, Role.MEMBER);
    expectError(
      await patch({ enter_sends: true }, member),
      'Must be an organization administrator',
      400,
      'UNAUTHORIZED_PRINCIPAL',
    );
  });
});
