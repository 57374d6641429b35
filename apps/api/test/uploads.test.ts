import request from 'supertest';
import * as db from '@parley/db';
import { Role, type User } from '@parley/db';
import { doUploadFile } from '../src/actions/uploads';
import { readUpload } from '../src/lib/upload-store';
import { createMessageOrg, png, send, type MessageOrg } from './message-helpers';
import {
  api,
  app,
  as,
  captureEvents,
  createChannel,
  createTestUser,
  expectError,
  expectSuccess,
} from './helpers';

describe('uploads', () => {
  let org: MessageOrg;
  beforeAll(async () => {
    org = await createMessageOrg();
  });

  const upload = (user: User, name: string, data: Buffer) =>
    api
      .post(org.host, '/user_uploads')
      .auth(user.deliveryEmail, user.apiKey)
      .attach('filename', data, name);
  const download = (user: User | null, url: string) => {
    const test = request(app).get(url).set('Host', org.host);
    return user ? test.auth(user.deliveryEmail, user.apiKey) : test;
  };
  const uploaded = async (user: User, name: string, data: Buffer) =>
    expectSuccess(await upload(user, name, data)) as { url: string; uri: string; filename: string };

  describe('POST /user_uploads', () => {
    it('stores the file, answers url, uri and filename, and tells the uploader', async () => {
      let result: { url: string; uri: string; filename: string } | undefined;
      const published = await captureEvents(org.realm.id, async () => {
        result = await uploaded(org.member, 'My Notes (final).txt', Buffer.from('hello'));
      });
      // The name as sent (Zulip's get_file_info); only the URL's is sanitized.
      expect(result!.filename).toBe('My Notes (final).txt');
      expect(result!.url).toMatch(
        new RegExp(`^/user_uploads/${org.realm.id}/[0-9a-f]{2}/[\\w-]{24}/My-Notes-final\\.txt$`),
      );
      expect(result!.uri).toBe(result!.url);
      expect(published).toEqual([
        {
          event: {
            type: 'attachment',
            op: 'add',
            attachment: expect.objectContaining({
              name: 'My Notes (final).txt',
              path_id: result!.url.slice('/user_uploads/'.length),
              size: 5,
              messages: [],
            }),
            upload_space_used: expect.any(Number),
          },
          users: [org.member.id],
        },
      ]);
      const file = await download(org.member, result!.url);
      expect(file.status).toBe(200);
      expect(file.text).toBe('hello');
      expect(file.headers['x-content-type-options']).toBe('nosniff');
    });

    it('keeps UTF-8 file names', async () => {
      const { filename, url } = await uploaded(org.member, '日本語 ファイル.txt', Buffer.from('x'));
      expect(filename).toBe('日本語 ファイル.txt');
      expect(url.endsWith('/日本語-ファイル.txt')).toBe(true);
      const file = await download(org.member, encodeURI(url));
      expect(file.status).toBe(200);
      expect(file.headers['content-disposition']).toContain(
        `filename*=UTF-8''${encodeURIComponent('日本語 ファイル.txt')}`,
      );
      // A percent-encoded name is decoded (Python's unquote); a lone "%" stays.
      expect((await uploaded(org.member, 'a%20b.txt', Buffer.from('x'))).filename).toBe('a b.txt');
      expect((await uploaded(org.member, '50%.txt', Buffer.from('x'))).filename).toBe('50%.txt');
    });

    it('takes the type from the name when the part declares none, as the Python client sends', async () => {
      // requests' multipart parts carry no Content-Type (multipart's default is text/plain).
      const part = (name: string, data: string) =>
        api
          .post(org.host, '/user_uploads')
          .auth(org.member.deliveryEmail, org.member.apiKey)
          .set('Content-Type', 'multipart/form-data; boundary=b0undary')
          .send(
            Buffer.from(
              `--b0undary\r\nContent-Disposition: form-data; name="file"; filename="${name}"` +
                `\r\n\r\n${data}\r\n--b0undary--\r\n`,
            ),
          );
      const pdf = expectSuccess(await part('report.pdf', '%PDF-1.4 fake')) as { url: string };
      expect((await download(org.member, pdf.url)).headers['content-type']).toBe('application/pdf');
      const text = expectSuccess(await part('notes.txt', 'plain words')) as { url: string };
      expect((await download(org.member, text.url)).headers['content-type']).toMatch(
        /^text\/plain/,
      );
      const bare = expectSuccess(await part('README', 'no extension')) as { url: string };
      expect((await download(org.member, bare.url)).headers['content-type']).toMatch(
        /^text\/plain/,
      );
    });

    it('needs exactly one file', async () => {
      expectError(
        await as(org.member, org.host).post('/user_uploads', {}),
        'You must specify a file to upload',
      );
      expectError(
        await upload(org.member, 'a.txt', Buffer.from('a')).attach(
          'second',
          Buffer.from('b'),
          'b.txt',
        ),
        'You may only upload one file at a time',
      );
    });
    it('keeps the bytes when the insert fails but a row names them', async () => {
      // As after a COMMIT whose acknowledgement was lost: a row names the path, so its bytes
      // must stay (the tus endpoint's retry answers with that row). Here the row is there
      // first, and the second insert of the path fails.
      const owner = await createTestUser(org.realm, Role.MEMBER);
      const pathId = `${org.realm.id}/aa/keptkeptkeptkeptkeptkept/kept.txt`;
      await db.getPrisma().attachment.create({
        data: {
          realmId: org.realm.id,
          ownerId: owner.id,
          fileName: 'kept.txt',
          pathId,
          size: 10,
          contentType: 'text/plain',
        },
      });
      const file = Buffer.from('still here');
      await expect(
        doUploadFile(
          owner,
          org.realm,
          { originalname: 'kept.txt', mimetype: 'text/plain', buffer: file, size: file.length },
          { pathId },
        ),
      ).rejects.toThrow();
      expect((await readUpload(pathId))?.toString()).toBe('still here');
    });
  });

  describe('opening uploads', () => {
    it('is for the uploader until a message shares the file with its readers', async () => {
      const { url } = await uploaded(org.member, 'plan.txt', Buffer.from('secret plan'));
      expectError(await download(org.other, url), 'You are not authorized to view this file.', 403);
      expectError(
        await download(null, url),
        'Missing authorization header for basic auth',
        401,
        'UNAUTHORIZED',
      );

      // Shared in the private channel: only its subscribers get it.
      expectSuccess(
        await send(org.member, org.host, {
          type: 'stream',
          to: 'secret',
          topic: 't',
          content: `[plan.txt](${url})`,
        }),
      );
      expectError(await download(org.other, url), 'You are not authorized to view this file.', 403);

      // Shared in a public channel: every member may open it, guests only if they received it.
      const { url: publicUrl } = await uploaded(org.member, 'notes.txt', Buffer.from('notes'));
      expectSuccess(
        await send(org.member, org.host, {
          type: 'stream',
          to: 'general',
          topic: 't',
          content: `see [notes.txt](${publicUrl})`,
        }),
      );
      expect((await download(org.other, publicUrl)).status).toBe(200);
      expect((await download(org.guest, publicUrl)).status).toBe(200);
      expect((await download(org.admin, publicUrl)).status).toBe(200);
    });

    it('follows the message: moved to a private channel, only its readers keep access', async () => {
      const { url } = await uploaded(org.member, 'moving.txt', Buffer.from('moving'));
      const id = expectSuccess(
        await send(org.member, org.host, {
          type: 'stream',
          to: 'general',
          topic: 'move me',
          content: `[moving.txt](${url})`,
        }),
      ).id as number;
      expect((await download(org.other, url)).status).toBe(200);
      expectSuccess(
        await as(org.member, org.host).patch(`/messages/${id}`, { stream_id: org.secret.id }),
      );
      expectError(await download(org.other, url), 'You are not authorized to view this file.', 403);
      expect((await download(org.member, url)).status).toBe(200);
    });

    it('follows channel membership, not only message copies, as Zulip’s validate_attachment_request', async () => {
      // A private channel with protected history: a copy is enough only while subscribed.
      const vault = await createChannel(
        org.realm,
        org.member,
        `vault-${Date.now()}`,
        [org.member, org.other],
        { inviteOnly: true, historyPublicToSubscribers: false },
      );
      const { url } = await uploaded(org.member, 'vault.txt', Buffer.from('vault'));
      expectSuccess(
        await send(org.member, org.host, {
          type: 'stream',
          to: vault.name,
          topic: 't',
          content: `[vault.txt](${url})`,
        }),
      );
      expect((await download(org.other, url)).status).toBe(200);
      expectSuccess(
        await as(org.other, org.host).delete('/users/me/subscriptions', {
          subscriptions: JSON.stringify([vault.name]),
        }),
      );
      expectError(await download(org.other, url), 'You are not authorized to view this file.', 403);

      // A direct message's copy is enough whatever happens to channels.
      const { url: dmUrl } = await uploaded(org.member, 'dm.txt', Buffer.from('dm'));
      expectSuccess(
        await send(org.member, org.host, {
          type: 'private',
          to: JSON.stringify([org.other.id]),
          content: `[dm.txt](${dmUrl})`,
        }),
      );
      expect((await download(org.other, dmUrl)).status).toBe(200);

      // A private channel with shared history whose subscribers may be added by a group: its
      // members read its files without a subscription or a copy.
      const shared = await createChannel(
        org.realm,
        org.member,
        `shared-${Date.now()}`,
        [org.member],
        {
          inviteOnly: true,
          historyPublicToSubscribers: true,
          groups: { can_subscribe_group: { direct_members: [org.admin.id], direct_subgroups: [] } },
        },
      );
      const { url: sharedUrl } = await uploaded(org.member, 'shared.txt', Buffer.from('shared'));
      expectSuccess(
        await send(org.member, org.host, {
          type: 'stream',
          to: shared.name,
          topic: 't',
          content: `[shared.txt](${sharedUrl})`,
        }),
      );
      expect((await download(org.admin, sharedUrl)).status).toBe(200);
      expectError(
        await download(org.other, sharedUrl),
        'You are not authorized to view this file.',
        403,
      );

      // An archived public channel's files stay open to members.
      const { url: oldUrl } = await uploaded(org.member, 'old.txt', Buffer.from('old'));
      const archived = await createChannel(org.realm, org.owner, `old-${Date.now()}`, [org.member]);
      expectSuccess(
        await send(org.member, org.host, {
          type: 'stream',
          to: archived.name,
          topic: 't',
          content: `[old.txt](${oldUrl})`,
        }),
      );
      expectSuccess(await as(org.owner, org.host).delete(`/streams/${archived.id}`));
      expect((await download(org.other, oldUrl)).status).toBe(200);
      expectError(
        await download(org.guest, oldUrl),
        'You are not authorized to view this file.',
        403,
      );
    });

    it('reports uploads an edit leaves unlinked as detached_uploads', async () => {
      const { url } = await uploaded(org.member, 'draft.txt', Buffer.from('draft'));
      const id = expectSuccess(
        await send(org.member, org.host, {
          type: 'stream',
          to: 'general',
          topic: 'edits',
          content: `[draft.txt](${url})`,
        }),
      ).id as number;
      const kept = expectSuccess(
        await as(org.member, org.host).patch(`/messages/${id}`, { content: `again ${url}` }),
      );
      expect(kept.detached_uploads).toEqual([]);
      const dropped = expectSuccess(
        await as(org.member, org.host).patch(`/messages/${id}`, { content: 'no file now' }),
      );
      expect(dropped.detached_uploads).toEqual([
        expect.objectContaining({
          name: 'draft.txt',
          path_id: url.slice('/user_uploads/'.length),
          messages: [],
        }),
      ]);
      // Unlinked, the file is the uploader's alone again.
      expectError(await download(org.other, url), 'You are not authorized to view this file.', 403);
    });

    it('gives a temporary URL that works without credentials', async () => {
      const { url } = await uploaded(org.member, 'temp.txt', Buffer.from('temporary'));
      const path = url.slice('/user_uploads/'.length);
      const link = expectSuccess(await as(org.member, org.host).get(`/user_uploads/${path}`))
        .url as string;
      expect(link).toMatch(/^\/user_uploads\/temporary\/[\w-]+\/temp\.txt$/);
      const file = await download(null, link);
      expect(file.status).toBe(200);
      expect(file.text).toBe('temporary');
      expectError(
        await as(org.other, org.host).get(`/user_uploads/${path}`),
        'You are not authorized to view this file.',
        403,
      );
      expectError(
        await download(null, '/user_uploads/temporary/nope/temp.txt'),
        'File not found',
        404,
      );
    });

    it('never leaves the uploads directory', async () => {
      for (const url of [
        `/user_uploads/${org.realm.id}/../../../../etc/passwd`,
        `/user_uploads/${org.realm.id}/%2e%2e/%2e%2e/etc/passwd`,
        `/user_uploads/${org.realm.id}/ab/none/missing.txt`,
        `/user_uploads/${org.realm.id}/%00`,
      ]) {
        const res = await download(org.member, url);
        expect(res.status).toBe(404);
      }
      // Not UTF-8 once decoded: refused before any lookup.
      const broken = await download(org.member, `/user_uploads/${org.realm.id}/%ED%A0%80`);
      expect(broken.status).toBe(400);
      expect(broken.body.result).toBe('error');
    });
  });

  describe('GET /attachments and DELETE /attachments/{attachment_id}', () => {
    it('lists the user’s own uploads and deletes them, file and all', async () => {
      const owner = await createTestUser(org.realm, Role.MEMBER);
      const { url } = await uploaded(owner, 'mine.txt', Buffer.from('mine'));
      const listed = expectSuccess(await as(owner, org.host).get('/attachments'));
      const attachments = listed.attachments as { id: number; name: string }[];
      expect(attachments).toEqual([
        expect.objectContaining({ name: 'mine.txt', path_id: url.slice('/user_uploads/'.length) }),
      ]);
      expect(listed.upload_space_used).toEqual(expect.any(Number));
      const id = attachments[0]!.id;
      expectError(
        await as(org.member, org.host).delete(`/attachments/${id}`),
        'Invalid attachment',
      );
      const published = await captureEvents(org.realm.id, async () => {
        expectSuccess(await as(owner, org.host).delete(`/attachments/${id}`));
      });
      expect(published).toEqual([
        {
          event: {
            type: 'attachment',
            op: 'remove',
            attachment: { id },
            upload_space_used: expect.any(Number),
          },
          users: [owner.id],
        },
      ]);
      expect(expectSuccess(await as(owner, org.host).get('/attachments')).attachments).toEqual([]);
      expect((await download(owner, url)).status).toBe(404);
      expectError(await as(owner, org.host).delete(`/attachments/${id}`), 'Invalid attachment');
    });
  });

  describe('uploaded images in messages', () => {
    it('get a preview with their dimensions, and the attachment records the message', async () => {
      const { url } = await uploaded(org.member, 'cat.png', png(640, 480));
      let id = 0;
      const published = await captureEvents(org.realm.id, async () => {
        id = expectSuccess(
          await send(org.member, org.host, {
            type: 'stream',
            to: 'general',
            topic: 'pets',
            content: `[cat.png](${url})`,
          }),
        ).id as number;
      });
      const message = expectSuccess(await as(org.other, org.host).get(`/messages/${id}`))
        .message as { content: string };
      expect(message.content).toBe(
        `<p><a href="${url}">cat.png</a></p>\n` +
          `<div class="message_inline_image"><a href="${url}" title="cat.png">` +
          // The thumbnail is made in the background (thumbnails.test.ts): until then, Zulip's
          // loading placeholder.
          `<img class="image-loading-placeholder" data-original-content-type="image/png" ` +
          `data-original-dimensions="640x480" src="/static/images/loading/loader-black.svg">` +
          `</a></div>`,
      );
      const update = published.find((p) => p.event.type === 'attachment')!;
      expect(update.users).toEqual([org.member.id]);
      expect(update.event).toEqual(
        expect.objectContaining({
          op: 'update',
          attachment: expect.objectContaining({
            messages: [{ id, date_sent: expect.any(Number) }],
          }),
        }),
      );
      const file = await download(org.other, url);
      expect(file.status).toBe(200);
      expect(file.headers['content-type']).toBe('image/png');
      // has:attachment and has:image find it.
      const found = expectSuccess(
        await as(org.other, org.host).get('/messages', {
          anchor: 'newest',
          num_before: 5,
          num_after: 0,
          narrow: [
            { operator: 'has', operand: 'attachment' },
            { operator: 'has', operand: 'image' },
          ],
        }),
      ).messages as { id: number }[];
      expect(found.map((m) => m.id)).toContain(id);
    });

    it('are not previewed when the upload is not an image or another user’s private file', async () => {
      const { url } = await uploaded(org.member, 'fake.png', Buffer.from('not an image'));
      const rendered = expectSuccess(
        await as(org.member, org.host).post('/messages/render', { content: `[fake.png](${url})` }),
      ).rendered;
      expect(rendered).toBe(`<p><a href="${url}">fake.png</a></p>`);
      const file = await download(org.member, url);
      expect(file.headers['content-type']).toBe('application/octet-stream');
      expect(file.headers['content-disposition']).toMatch(/^attachment;/);
    });
  });
});
