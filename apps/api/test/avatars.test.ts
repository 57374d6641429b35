// Uploaded avatars (Zulip's POST and DELETE /users/me/avatar): the image is resized in the
// request to Zulip's two square sizes, served publicly under a random name; every change is
// told with the avatar form of realm_user update, and replaced files go.
import request from 'supertest';
import sharp from 'sharp';
import { getPrisma, Role, type User } from '@parley/db';
import {
  api,
  app,
  as,
  bytes,
  captureEvents,
  createTestRealm,
  createTestUser,
  expectError,
  expectSuccess,
  type TestRealm,
} from './helpers';

const prisma = () => getPrisma();

/** A real image sharp decodes: a `width`×`height` red rectangle. */
function picture(width: number, height: number, format: 'png' | 'jpeg' = 'png'): Promise<Buffer> {
  return sharp({
    create: { width, height, channels: 3, background: { r: 200, g: 20, b: 20 } },
  })
    .toFormat(format)
    .toBuffer();
}

describe('uploaded avatars', () => {
  let org: TestRealm;
  let user: User;
  let other: User;
  beforeAll(async () => {
    org = await createTestRealm();
    user = await createTestUser(org.realm, Role.MEMBER, { fullName: 'Ava Tar' });
    other = await createTestUser(org.realm);
  });
  const upload = (who: User, ...files: [Buffer, string][]) => {
    const req = api.post(org.host, '/users/me/avatar').auth(who.deliveryEmail, who.apiKey);
    for (const [bytes, name] of files) req.attach(name, bytes, name);
    return req;
  };
  const fetchImage = (url: string) =>
    request(app).get(url).set('Host', org.host).buffer(true).parse(bytes);
  const hashOf = (url: string) => /\/([0-9a-f]{40})\.png\?/.exec(url)![1]!;

  it('serves an upload in its two square sizes, without its metadata, and tells everyone', async () => {
    // A photo with its camera's EXIF data.
    const jpeg = await sharp(await picture(300, 200, 'jpeg'))
      .withExif({ IFD0: { Make: 'Secret Camera' } })
      .jpeg()
      .toBuffer();
    let url = '';
    const published = await captureEvents(org.realm.id, async () => {
      url = expectSuccess(await upload(user, [jpeg, 'me.jpg'])).avatar_url as string;
    });
    const version = user.avatarVersion + 1;
    expect(url).toMatch(
      new RegExp(`^/user_avatars/${org.realm.id}/[0-9a-f]{40}\\.png\\?version=${version}$`),
    );
    const hash = hashOf(url);
    const person = {
      user_id: user.id,
      avatar_source: 'U',
      avatar_url: url,
      avatar_url_medium: `/user_avatars/${org.realm.id}/${hash}-medium.png?version=${version}`,
      avatar_version: version,
    };
    // One URL for every viewer: one event.
    expect(published).toEqual([
      {
        event: { type: 'realm_user', op: 'update', person },
        users: expect.arrayContaining([user.id, other.id, org.owner.id]) as number[],
      },
    ]);

    // To anyone (no credentials), resized, as PNG without the upload's metadata.
    for (const [path, size] of [
      [url, 100],
      [person.avatar_url_medium, 500],
    ] as const) {
      const resized = await fetchImage(path);
      expect(resized.status).toBe(200);
      expect(resized.headers['content-type']).toBe('image/png');
      const metadata = await sharp(resized.body as Buffer).metadata();
      expect(metadata).toMatchObject({ format: 'png', width: size, height: size });
      expect(metadata.exif).toBeUndefined();
      expect((resized.body as Buffer).includes('Secret Camera')).toBe(false);
    }

    // Everywhere the user is shown.
    const me = expectSuccess(await as(user, org.host).get('/users/me'));
    expect(me).toMatchObject({ avatar_url: url, avatar_version: version });
    const seen = expectSuccess(await as(other, org.host).get(`/users/${user.id}`)).user;
    expect(seen).toMatchObject({ avatar_url: url });
    const state = expectSuccess(
      await as(user, org.host).post('/register', { fetch_event_types: '["realm_user"]' }),
    );
    expect(state).toMatchObject({
      avatar_source: 'U',
      avatar_url: url,
      avatar_url_medium: person.avatar_url_medium,
    });
  });

  it('replaces an upload (the old files go) and goes back to Gravatar on DELETE', async () => {
    const first = expectSuccess(await upload(user, [await picture(50, 50), 'a.png']))
      .avatar_url as string;
    const second = expectSuccess(await upload(user, [await picture(60, 40), 'b.png']))
      .avatar_url as string;
    expect(hashOf(second)).not.toBe(hashOf(first));
    expect((await fetchImage(first)).status).toBe(404);
    expect((await fetchImage(first.replace('.png?', '-medium.png?'))).status).toBe(404);
    expect((await fetchImage(second)).status).toBe(200);

    const before = await prisma().user.findUniqueOrThrow({ where: { id: user.id } });
    let answer: Record<string, unknown> = {};
    const published = await captureEvents(org.realm.id, async () => {
      answer = expectSuccess(await as(user, org.host).delete('/users/me/avatar'));
    });
    expect(answer.avatar_url).toMatch(/^https:\/\/secure\.gravatar\.com\/avatar\//);
    expect(published[0]!.event.person).toMatchObject({
      avatar_source: 'G',
      avatar_version: before.avatarVersion + 1,
    });
    expect((await fetchImage(second)).status).toBe(404);
    expect((await fetchImage(second.replace('.png?', '-medium.png?'))).status).toBe(404);
    // Back to Gravatar: its URL hashes the address each viewer sees.
    for (const { event } of published)
      expect((event.person as { avatar_url: string }).avatar_url).toMatch(
        /^https:\/\/secure\.gravatar\.com\/avatar\/[0-9a-f]{32}\?d=identicon&version=\d+$/,
      );
    const after = await prisma().user.findUniqueOrThrow({ where: { id: user.id } });
    expect(after).toMatchObject({ avatarSource: 'G', avatarHash: null });
    // Nothing uploaded: nothing changes.
    const again = await captureEvents(org.realm.id, async () => {
      expectSuccess(await as(user, org.host).delete('/users/me/avatar'));
    });
    expect(again).toEqual([]);
  });

  it('shows an uploaded avatar on messages', async () => {
    const url = expectSuccess(await upload(other, [await picture(20, 20), 'o.png']))
      .avatar_url as string;
    const channel = `avatars ${Math.random()}`;
    expectSuccess(
      await as(other, org.host).post('/users/me/subscriptions', {
        subscriptions: [{ name: channel }],
      }),
    );
    const id = expectSuccess(
      await as(other, org.host).post('/messages', {
        type: 'stream',
        to: channel,
        topic: 't',
        content: 'hi',
      }),
    ).id as number;
    const shown = expectSuccess(await as(other, org.host).get(`/messages/${id}`)).message;
    expect(shown).toMatchObject({ avatar_url: url });
  });

  it("removes a deleted profile's uploaded picture", async () => {
    const leaving = await createTestUser(org.realm);
    const url = expectSuccess(await upload(leaving, [await picture(30, 30), 'l.png']))
      .avatar_url as string;
    expect((await fetchImage(url)).status).toBe(200);
    expectSuccess(
      await as(org.owner, org.host).delete(`/users/${leaving.id}`, {
        actions: { delete_profile: true },
      }),
    );
    expect((await fetchImage(url)).status).toBe(404);
    expect((await fetchImage(url.replace('.png?', '-medium.png?'))).status).toBe(404);
    expect(await prisma().user.findUniqueOrThrow({ where: { id: leaving.id } })).toMatchObject({
      avatarSource: 'G',
      avatarHash: null,
    });
  });

  it('refuses what Zulip refuses', async () => {
    expectError(await upload(user), 'You must upload exactly one avatar.');
    const png = await picture(10, 10);
    expectError(
      await upload(user, [png, 'a.png'], [png, 'b.png']),
      'You must upload exactly one avatar.',
    );
    const avatarBefore = await prisma().user.findUniqueOrThrow({ where: { id: user.id } });
    expectError(
      await upload(user, [Buffer.from('not an image at all'), 'a.png']),
      'Could not decode image; did you upload an image file?',
    );
    // A valid PNG header over a body that does not decode.
    const truncated = (await picture(40, 40)).subarray(0, 60);
    expectError(
      await upload(user, [truncated, 'a.png']),
      'Could not decode image; did you upload an image file?',
    );
    // Formats other than PNG, JPEG, GIF and WebP never reach the image library.
    const tiff = await sharp(await picture(10, 10))
      .tiff()
      .toBuffer();
    expectError(
      await upload(user, [tiff, 'a.tiff']),
      'Could not decode image; did you upload an image file?',
    );
    // A decompression bomb: a small GIF claiming a 20,000-pixel square canvas.
    const gif = await sharp(await picture(10, 10))
      .gif()
      .toBuffer();
    gif.writeUInt16LE(20_000, 6);
    gif.writeUInt16LE(20_000, 8);
    expectError(await upload(user, [gif, 'a.gif']), 'Image size exceeds limit.');
    // Nothing changed.
    expect(await prisma().user.findUniqueOrThrow({ where: { id: user.id } })).toMatchObject({
      avatarSource: avatarBefore.avatarSource,
      avatarVersion: avatarBefore.avatarVersion,
    });
    await prisma().realm.update({
      where: { id: org.realm.id },
      data: { avatarChangesDisabled: true },
    });
    try {
      expectError(
        await upload(user, [png, 'a.png']),
        'Avatar changes are disabled in this organization.',
      );
      expectError(
        await as(user, org.host).delete('/users/me/avatar'),
        'Avatar changes are disabled in this organization.',
      );
      // Administrators may still change theirs.
      expectSuccess(await upload(org.owner, [png, 'a.png']));
    } finally {
      await prisma().realm.update({
        where: { id: org.realm.id },
        data: { avatarChangesDisabled: false },
      });
    }
    for (const path of [
      `/user_avatars/${org.realm.id}/${'0'.repeat(40)}.png`,
      `/user_avatars/${org.realm.id}/nothex.png`,
      `/user_avatars/${org.realm.id}/${'0'.repeat(40)}.original`,
      `/user_avatars/abc/${'0'.repeat(40)}.png`,
    ])
      expect((await fetchImage(path)).status).toBe(404);
  });
});
