import request from 'supertest';
import { getPrisma, type User } from '@parley/db';
import { emojiStorePath } from '../src/lib/realm-emoji';
import { storeUpload } from '../src/lib/upload-store';
import { createMessageOrg, png, send, type MessageOrg } from './message-helpers';
import { api, app, as, captureEvents, expectError, expectSuccess } from './helpers';

describe('custom emoji', () => {
  let org: MessageOrg;
  beforeAll(async () => {
    org = await createMessageOrg();
  });
  afterEach(async () => {
    await getPrisma().realmEmoji.deleteMany({ where: { realmId: org.realm.id } });
  });

  const add = (user: User, name: string, data: Buffer = png(64, 64)) =>
    api
      .post(org.host, `/realm/emoji/${name}`)
      .auth(user.deliveryEmail, user.apiKey)
      .attach('file', data, `${name}.png`);
  const list = async () =>
    expectSuccess(await as(org.member, org.host).get('/realm/emoji')).emoji as Record<
      string,
      { id: string; name: string; source_url: string; deactivated: boolean; author_id: number }
    >;

  describe('POST /realm/emoji/{emoji_name}', () => {
    it('adds the emoji, serves its image and tells everyone the whole set', async () => {
      const published = await captureEvents(org.realm.id, async () => {
        expectSuccess(await add(org.member, 'party_parrot'));
      });
      const [entry] = Object.values(await list());
      expect(entry).toEqual({
        id: expect.stringMatching(/^\d+$/),
        name: 'party_parrot',
        source_url: `/user_avatars/${org.realm.id}/emoji/images/${entry!.id}.png`,
        deactivated: false,
        author_id: org.member.id,
        still_url: null,
      });
      expect(published).toHaveLength(1);
      expect(published[0]!.event).toEqual({
        type: 'realm_emoji',
        op: 'update',
        realm_emoji: { [entry!.id]: entry },
      });
      expect(published[0]!.users).toHaveLength(5);
      const image = await request(app).get(entry!.source_url).set('Host', org.host);
      expect(image.status).toBe(200);
      expect(image.headers['content-type']).toBe('image/png');
    });

    it('replaces an image a restored database left at the new emoji’s path', async () => {
      // The id the next emoji gets, and a stale image already stored under it (as after a
      // database restored to an earlier point than the uploads).
      const [row] = await getPrisma().$queryRaw<{ next: bigint }[]>`
        SELECT last_value + 1 AS next FROM realm_emoji_id_seq`;
      const next = row!.next;
      await storeUpload(emojiStorePath(org.realm.id, `${next}.png`), png(8, 8));
      expectSuccess(await add(org.member, 'restored'));
      const [entry] = Object.values(await list());
      expect(entry!.id).toBe(String(next));
      const image = await request(app).get(entry!.source_url).set('Host', org.host);
      expect(image.status).toBe(200);
      expect(Buffer.compare(image.body as Buffer, png(64, 64))).toBe(0);
    });

    it('checks the name, the file and who may add', async () => {
      expectError(
        await add(org.member, 'Bad Name'),
        'Emoji names must contain only lowercase English letters, digits, spaces, dashes, and underscores.',
      );
      expectError(
        await add(org.member, 'trailing_'),
        'Emoji names must end with either a letter or digit.',
      );
      expectError(await add(org.member, '%20'), 'Emoji name is missing');
      expectSuccess(await add(org.member, 'two%20words'));
      expect(Object.values(await list()).map((emoji) => emoji.name)).toContain('two_words');
      expectError(
        await add(org.member, 'notimage', Buffer.from('plain text')),
        'Invalid image format',
      );
      expectError(
        await add(org.member, 'huge', Buffer.concat([png(64, 64), Buffer.alloc(5 * 1024 * 1024)])),
        'Uploaded file is larger than the allowed limit of 5 MiB',
      );
      expectError(
        await as(org.member, org.host).post('/realm/emoji/nofile', {}),
        'You must upload exactly one file.',
      );
      // Zulip's require_member_or_admin comes first.
      expectError(await add(org.guest, 'guesty'), 'Not allowed for guest users');
      const created = expectSuccess(
        await as(org.member, org.host).post('/bots', {
          full_name: 'Emoji bot',
          short_name: `emoji${Date.now()}`,
        }),
      );
      const bot = await getPrisma().user.findUniqueOrThrow({
        where: { id: created.user_id as number },
      });
      expectError(await add(bot, 'boty'), 'This endpoint does not accept bot requests.');
      expectError(
        await add(org.member, 'smile'),
        'Only administrators can override default emoji.',
      );
      expectSuccess(await add(org.admin, 'smile'));
      expectSuccess(await add(org.member, 'dup'));
      expectError(await add(org.other, 'dup'), 'A custom emoji with this name already exists.');
      // A taken name is said before the file or the override is looked at (upload_emoji).
      expectError(await add(org.member, 'smile'), 'A custom emoji with this name already exists.');
      expectError(
        await add(org.other, 'dup', Buffer.from('plain text')),
        'A custom emoji with this name already exists.',
      );
    });
  });

  describe('DELETE /realm/emoji/{emoji_name}', () => {
    it('deactivates for the author or an administrator, and the name can be reused', async () => {
      expectSuccess(await add(org.member, 'wave2'));
      expectError(
        await as(org.other, org.host).delete('/realm/emoji/wave2'),
        'Must be an organization administrator or emoji author',
      );
      expectSuccess(await as(org.member, org.host).delete('/realm/emoji/wave2'));
      expect(Object.values(await list())).toEqual([
        expect.objectContaining({ name: 'wave2', deactivated: true }),
      ]);
      expectError(
        await as(org.admin, org.host).delete('/realm/emoji/wave2'),
        "Emoji 'wave2' does not exist",
        404,
      );
      expectSuccess(await add(org.other, 'wave2'));
      expectSuccess(await as(org.admin, org.host).delete('/realm/emoji/wave2'));
    });
  });

  describe('in messages and reactions', () => {
    it('renders :name: as the image and reacts with it', async () => {
      expectSuccess(await add(org.member, 'shipit'));
      const [entry] = Object.values(await list());
      const id = expectSuccess(
        await send(org.member, org.host, {
          type: 'stream',
          to: 'general',
          topic: 'emoji',
          content: 'ready :shipit: :smile:',
        }),
      ).id as number;
      const message = expectSuccess(await as(org.other, org.host).get(`/messages/${id}`))
        .message as { content: string };
      expect(message.content).toBe(
        `<p>ready <img alt=":shipit:" class="emoji" src="${entry!.source_url}" title="shipit"> ` +
          '<span aria-label="smile" class="emoji emoji-1f642" role="img" title="smile">:smile:</span></p>',
      );

      // A new reaction's name must be the emoji's (checked only while nobody has reacted with
      // it: later ones are votes for the first, as in Zulip's check_add_reaction).
      expectError(
        await as(org.other, org.host).post(`/messages/${id}/reactions`, {
          emoji_name: 'other',
          emoji_code: entry!.id,
          reaction_type: 'realm_emoji',
        }),
        'Invalid custom emoji name.',
      );
      // By name alone, the custom emoji is meant.
      expectSuccess(
        await as(org.other, org.host).post(`/messages/${id}/reactions`, { emoji_name: 'shipit' }),
      );
      expectError(
        await as(org.other, org.host).post(`/messages/${id}/reactions`, {
          emoji_name: 'shipit',
          emoji_code: entry!.id,
          reaction_type: 'realm_emoji',
        }),
        'Reaction already exists.',
        400,
        'REACTION_ALREADY_EXISTS',
      );
      const reactions = (
        expectSuccess(await as(org.other, org.host).get(`/messages/${id}`)).message as {
          reactions: unknown[];
        }
      ).reactions;
      expect(reactions).toEqual([
        {
          emoji_name: 'shipit',
          emoji_code: entry!.id,
          reaction_type: 'realm_emoji',
          user_id: org.other.id,
        },
      ]);

      // Deactivated: existing reactions can go, and no new ones come (joining an existing one
      // stays possible: a vote, as Zulip's check_add_reaction allows).
      expectSuccess(await as(org.member, org.host).delete('/realm/emoji/shipit'));
      expectSuccess(
        await as(org.other, org.host).delete(`/messages/${id}/reactions`, {
          emoji_name: 'shipit',
          emoji_code: entry!.id,
          reaction_type: 'realm_emoji',
        }),
      );
      expectError(
        await as(org.member, org.host).post(`/messages/${id}/reactions`, {
          emoji_name: 'shipit',
          emoji_code: entry!.id,
          reaction_type: 'realm_emoji',
        }),
        'This custom emoji has been deactivated.',
      );
    });
  });

  it('appears in /register', async () => {
    expectSuccess(await add(org.member, 'tada2'));
    const state = expectSuccess(
      await request(app)
        .post('/api/v1/register')
        .set('Host', org.host)
        .auth(org.member.deliveryEmail, org.member.apiKey)
        .type('form')
        .send({ fetch_event_types: JSON.stringify(['realm_emoji']) }),
    );
    expect(Object.values(state.realm_emoji as object)).toEqual([
      expect.objectContaining({ name: 'tada2', deactivated: false }),
    ]);
  });
});
