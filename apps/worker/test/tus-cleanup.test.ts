// The hourly upload clean-up also deletes resumable uploads (/api/v1/tus) begun longer than
// TUS_UPLOAD_EXPIRATION_HOURS ago and never finished. Uploads are made old by moving their
// creation date back, never by waiting.
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import request from 'supertest';
import { closeQueues } from '@parley/jobs';
import { stopTusLocker } from '@parley/api/lib/tus-locker';
import { stagedFilePath } from '@parley/api/lib/tus-store';
import { app, createTestRealm, type TestRealm } from '../../api/test/helpers';
import { JOB_HANDLERS } from '../src/jobs';

let org: TestRealm;

beforeAll(async () => {
  org = await createTestRealm();
});

afterAll(async () => {
  await Promise.all([closeQueues(), stopTusLocker()]);
});

/** Begins an upload of 10 bytes and sends 3; its id. */
async function unfinishedUpload(): Promise<string> {
  const { owner } = org;
  const created = await request(app)
    .post('/api/v1/tus')
    .set('Host', org.host)
    .auth(owner.deliveryEmail, owner.apiKey)
    .set('Tus-Resumable', '1.0.0')
    .set('Upload-Length', '10');
  expect(created.status).toBe(201);
  const location = created.headers.location as string;
  const chunk = await request(app)
    .patch(location)
    .set('Host', org.host)
    .auth(owner.deliveryEmail, owner.apiKey)
    .set('Tus-Resumable', '1.0.0')
    .set('Content-Type', 'application/offset+octet-stream')
    .set('Upload-Offset', '0')
    .send(Buffer.from('abc'));
  expect(chunk.status).toBe(204);
  return location.split('/').pop()!;
}

async function beganHoursAgo(id: string, hours: number): Promise<void> {
  const file = `${stagedFilePath(id)}.json`;
  const info = JSON.parse(await readFile(file, 'utf8')) as { creation_date: string };
  info.creation_date = new Date(Date.now() - hours * 3600_000).toISOString();
  await writeFile(file, JSON.stringify(info));
}

describe('the upload clean-up job', () => {
  it('deletes resumable uploads abandoned for longer than TUS_UPLOAD_EXPIRATION_HOURS', async () => {
    const abandoned = await unfinishedUpload();
    const recent = await unfinishedUpload();
    await beganHoursAgo(abandoned, 25);
    await beganHoursAgo(recent, 23);
    await JOB_HANDLERS['delete-unclaimed-uploads']({});
    expect(existsSync(stagedFilePath(abandoned))).toBe(false);
    expect(existsSync(`${stagedFilePath(abandoned)}.json`)).toBe(false);
    expect(existsSync(stagedFilePath(recent))).toBe(true);
  });
});
