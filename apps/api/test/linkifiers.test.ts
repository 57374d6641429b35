import request from 'supertest';
import { getPrisma, type User } from '@parley/db';
import { createMessageOrg, send, type MessageOrg } from './message-helpers';
import { app, as, captureEvents, expectError, expectSuccess } from './helpers';

const tracker = {
  pattern: '#(?P<id>[0-9]+)',
  url_template: 'https://tracker.example/ticket/{id}',
};

describe('linkifiers', () => {
  let org: MessageOrg;
  beforeAll(async () => {
    org = await createMessageOrg();
  });
  const add = (user: User, form: Record<string, unknown>) =>
    as(user, org.host).post('/realm/filters', form);
  const list = async () =>
    expectSuccess(await as(org.member, org.host).get('/realm/linkifiers')).linkifiers as {
      id: number;
      pattern: string;
    }[];
  const allUsers = () => [org.owner, org.admin, org.member, org.other, org.guest].map((u) => u.id);

  afterEach(async () => {
    await getPrisma().linkifier.deleteMany({ where: { realmId: org.realm.id } });
  });

  describe('POST /realm/filters', () => {
    it('adds a linkifier, lists it and tells the whole organization', async () => {
      let id = 0;
      const published = await captureEvents(org.realm.id, async () => {
        id = expectSuccess(await add(org.admin, tracker)).id as number;
      });
      const entry = {
        id,
        ...tracker,
        example_input: null,
        reverse_template: null,
        alternative_url_templates: [],
      };
      expect(await list()).toEqual([entry]);
      expect(published).toHaveLength(1);
      expect(published[0]!.event).toEqual({ type: 'realm_linkifiers', realm_linkifiers: [entry] });
      expect([...published[0]!.users].sort()).toEqual(allUsers().sort());
    });

    it('is for administrators only', async () => {
      expectError(
        await add(org.member, tracker),
        'Must be an organization administrator',
        400,
        'UNAUTHORIZED_PRINCIPAL',
      );
      expect(await list()).toEqual([]);
    });

    it('rejects bad patterns, bad templates and mismatched groups with Zulip’s messages', async () => {
      expectError(await add(org.admin, { ...tracker, pattern: '' }), 'This field cannot be blank.');
      expectError(
        await add(org.admin, { ...tracker, pattern: '(foo' }),
        'Bad regular expression: missing ): (foo',
      );
      expectError(
        await add(org.admin, { ...tracker, url_template: '{id' }),
        'Invalid URL template.',
      );
      expectError(
        await add(org.admin, { ...tracker, url_template: 'https://x.example/{hello}' }),
        "Group 'hello' in URL template is not present in linkifier pattern.",
      );
      expectError(
        await add(org.admin, { ...tracker, pattern: 'x'.repeat(501) }),
        'pattern is too long (limit: 500 characters)',
      );
      expectSuccess(await add(org.admin, tracker));
      // Zulip strips both, so the same pattern with spaces around it is a duplicate, and
      // answers with Django's errors by field (ValidationFailureError).
      const again = await add(org.admin, {
        pattern: ` ${tracker.pattern} `,
        url_template: `${tracker.url_template}\n`,
      });
      expectError(again, 'Realm filter with this Realm and Pattern already exists.');
      expect(again.body.errors).toEqual({
        __all__: ['Realm filter with this Realm and Pattern already exists.'],
      });
      const blank = await add(org.admin, { pattern: '   ', url_template: tracker.url_template });
      expectError(blank, 'This field cannot be blank.');
      expect(blank.body.errors).toEqual({
        pattern: ['This field cannot be blank.'],
        __all__: ["Group 'id' in URL template is not present in linkifier pattern."],
      });
    });

    it('checks reverse templates against the example input', async () => {
      const reverse = {
        pattern: '(?P<repo>[a-z]+)#(?P<id>[0-9]+)',
        url_template: 'https://code.example/{repo}/issues/{id}',
        alternative_url_templates: JSON.stringify(['https://code.example/{repo}/pull/{id}']),
      };
      expectError(
        await add(org.admin, { ...reverse, reverse_template: '{repo}#{id}' }),
        'An example input is required for a reverse template.',
      );
      expectError(
        await add(org.admin, { ...reverse, example_input: 'nope' }),
        'Example input does not match the linkifier pattern.',
      );
      expectError(
        await add(org.admin, {
          ...reverse,
          example_input: 'zulip#12',
          reverse_template: '{id}#{repo}',
        }),
        'Reverse template does not reproduce the example input.',
      );
      expectError(
        await add(org.admin, { ...reverse, alternative_url_templates: JSON.stringify(['{x']) }),
        'Invalid URL template.',
      );
      const id = expectSuccess(
        await add(org.admin, {
          ...reverse,
          example_input: 'zulip#12',
          reverse_template: '{repo}#{id}',
        }),
      ).id;
      expect(await list()).toEqual([
        expect.objectContaining({
          id,
          example_input: 'zulip#12',
          reverse_template: '{repo}#{id}',
          alternative_url_templates: ['https://code.example/{repo}/pull/{id}'],
        }),
      ]);
      // An empty string resets to null; other fields keep their values.
      expectSuccess(
        await as(org.admin, org.host).patch(`/realm/filters/${id}`, {
          pattern: reverse.pattern,
          url_template: reverse.url_template,
          reverse_template: '',
        }),
      );
      expect((await list())[0]).toEqual(
        expect.objectContaining({ example_input: 'zulip#12', reverse_template: null }),
      );
    });
  });

  describe('PATCH and DELETE /realm/filters/{filter_id}', () => {
    it('updates and removes, and refuses unknown ids', async () => {
      const id = expectSuccess(await add(org.admin, tracker)).id as number;
      const changed = { pattern: 'T-(?P<id>[0-9]+)', url_template: 'https://t.example/{id}' };
      expectSuccess(await as(org.admin, org.host).patch(`/realm/filters/${id}`, changed));
      expect(await list()).toEqual([expect.objectContaining({ id, ...changed })]);
      expectError(
        await as(org.admin, org.host).patch(`/realm/filters/${id + 1000}`, changed),
        'Linkifier not found.',
      );
      expectError(
        await as(org.admin, org.host).patch(`/realm/filters/${id}`, {
          ...changed,
          url_template: '{id',
        }),
        'Invalid URL template.',
      );
      expectError(
        await as(org.member, org.host).delete(`/realm/filters/${id}`),
        'Must be an organization administrator',
        400,
        'UNAUTHORIZED_PRINCIPAL',
      );
      expectSuccess(await as(org.admin, org.host).delete(`/realm/filters/${id}`));
      expectError(
        await as(org.admin, org.host).delete(`/realm/filters/${id}`),
        'Linkifier not found.',
      );
      expect(await list()).toEqual([]);
    });
  });

  describe('PATCH /realm/linkifiers', () => {
    it('reorders when the list names every linkifier once', async () => {
      const ids: number[] = [];
      for (const n of [1, 2, 3])
        ids.push(
          expectSuccess(
            await add(org.admin, {
              pattern: `${n}#(?P<id>[0-9])`,
              url_template: `https://x.example/${n}/{id}`,
            }),
          ).id as number,
        );
      const reorder = (order: number[]) =>
        as(org.admin, org.host).patch('/realm/linkifiers', {
          ordered_linkifier_ids: JSON.stringify(order),
        });
      const reversed = [...ids].reverse();
      expectSuccess(await reorder(reversed));
      expect((await list()).map((l) => l.id)).toEqual(reversed);
      expectError(
        await reorder([...reversed, reversed[0]!]),
        'The ordered list must not contain duplicated linkifiers',
      );
      expectError(
        await reorder(reversed.slice(0, 2)),
        'The ordered list must enumerate all existing linkifiers exactly once',
      );
      // A new linkifier goes last.
      const newest = expectSuccess(
        await add(org.admin, {
          pattern: '4#(?P<id>[0-9])',
          url_template: 'https://x.example/4/{id}',
        }),
      ).id;
      expect((await list()).map((l) => l.id)).toEqual([...reversed, newest]);
    });
  });

  describe('in messages', () => {
    it('links matches in content and reports topic_links when sent and fetched', async () => {
      expectSuccess(await add(org.admin, tracker));
      let id = 0;
      const published = await captureEvents(org.realm.id, async () => {
        id = expectSuccess(
          await send(org.member, org.host, {
            type: 'stream',
            to: 'general',
            topic: 'bug #77',
            content: 'fixed in #78',
          }),
        ).id as number;
      });
      const event = published.find((p) => p.event.type === 'message')!.event as unknown as {
        message: Record<string, unknown>;
      };
      const links = [{ text: '#77', url: 'https://tracker.example/ticket/77' }];
      expect(event.message.topic_links).toEqual(links);
      expect(event.message.content).toBe(
        '<p>fixed in <a href="https://tracker.example/ticket/78">#78</a></p>',
      );
      const fetched = expectSuccess(await as(org.member, org.host).get(`/messages/${id}`))
        .message as Record<string, unknown>;
      expect(fetched.topic_links).toEqual(links);

      // A topic edit carries the new topic's links.
      const edits = await captureEvents(org.realm.id, async () => {
        expectSuccess(
          await as(org.member, org.host).patch(`/messages/${id}`, { topic: 'bug #79' }),
        );
      });
      const update = edits.find((p) => p.event.type === 'update_message')!.event;
      expect(update.topic_links).toEqual([
        { text: '#79', url: 'https://tracker.example/ticket/79' },
      ]);
    });
  });

  describe('in channel descriptions', () => {
    it('links matches, and mentions nobody', async () => {
      expectSuccess(await add(org.admin, tracker));
      expectSuccess(
        await as(org.member, org.host).post('/users/me/subscriptions', {
          subscriptions: [{ name: 'tickets', description: 'Triage #12 with @**Otto Other**' }],
        }),
      );
      const stream = await getPrisma().stream.findFirstOrThrow({
        where: { realmId: org.realm.id, name: 'tickets' },
      });
      expect(stream.renderedDescription).toBe(
        '<p>Triage <a href="https://tracker.example/ticket/12">#12</a> with @<strong>Otto Other</strong></p>',
      );
    });
  });

  describe('POST /register', () => {
    const register = (capabilities: Record<string, boolean>) =>
      request(app)
        .post('/api/v1/register')
        .set('Host', org.host)
        .auth(org.member.deliveryEmail, org.member.apiKey)
        .type('form')
        .send({
          fetch_event_types: JSON.stringify(['realm_linkifiers']),
          client_capabilities: JSON.stringify(capabilities),
        });

    it('returns the linkifiers only to clients with linkifier_url_template', async () => {
      const id = expectSuccess(await add(org.admin, tracker)).id;
      expect(
        expectSuccess(await register({ linkifier_url_template: true })).realm_linkifiers,
      ).toEqual([expect.objectContaining({ id, ...tracker })]);
      expect(expectSuccess(await register({})).realm_linkifiers).toEqual([]);
    });
  });
});
