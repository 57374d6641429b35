// A real S3 API for the upload tests: s3rver (a fake S3 written in Node, storing objects in a
// scratch directory) on a free loopback port, and the environment that points the upload store
// at it. Each test file that uses it gets its own server, buckets and directory.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import { resetConfig } from '@parley/config';

/** s3rver's fixed credentials (it checks signatures against them). */
const KEY = 'S3RVER';

export interface TestS3 {
  endpoint: string;
  uploadsBucket: string;
  avatarBucket: string;
  /** Whether `key` is an object of `bucket` (read with a client of the test's own). */
  hasObject(bucket: string, key: string): Promise<boolean>;
  stop(): Promise<void>;
}

export async function startS3(): Promise<TestS3> {
  // The SDK's notice that its 2027 releases need Node 22 (docs/storage.md says so): once is
  // enough, not in every test run.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const directory = await mkdtemp(join(tmpdir(), 'parley-s3rver-'));
  const uploadsBucket = 'parley-uploads';
  const avatarBucket = 'parley-avatars';
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    directory,
    silent: true,
    configureBuckets: [{ name: uploadsBucket }, { name: avatarBucket }],
  });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new S3Client({
    region: 'us-east-1',
    endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: KEY, secretAccessKey: KEY },
  });
  return {
    endpoint,
    uploadsBucket,
    avatarBucket,
    async hasObject(bucket, key) {
      try {
        await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
        return true;
      } catch (error) {
        if ((error as { name?: string }).name === 'NotFound') return false;
        throw error;
      }
    },
    async stop() {
      client.destroy();
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}

const S3_SETTINGS = [
  'UPLOAD_BACKEND',
  'S3_AUTH_UPLOADS_BUCKET',
  'S3_AVATAR_BUCKET',
  'S3_ENDPOINT_URL',
  'S3_SERVE_MODE',
  'S3_KEY',
  'S3_SECRET_KEY',
] as const;

/** Sets the configuration to store uploads in `s3`, files served as `serveMode` says (and,
 * with `endpoint`, at another address: one nothing listens on stands for an outage); returns
 * the function that puts the previous settings back. */
export function useS3Config(
  s3: TestS3,
  {
    serveMode = 'redirect',
    endpoint = s3.endpoint,
  }: { serveMode?: string; endpoint?: string } = {},
): () => void {
  const saved = Object.fromEntries(S3_SETTINGS.map((name) => [name, process.env[name]]));
  Object.assign(process.env, {
    UPLOAD_BACKEND: 's3',
    S3_AUTH_UPLOADS_BUCKET: s3.uploadsBucket,
    S3_AVATAR_BUCKET: s3.avatarBucket,
    S3_ENDPOINT_URL: endpoint,
    S3_SERVE_MODE: serveMode,
    S3_KEY: KEY,
    S3_SECRET_KEY: KEY,
  });
  resetConfig();
  return () => {
    for (const name of S3_SETTINGS) {
      if (saved[name] === undefined) delete process.env[name];
      else process.env[name] = saved[name];
    }
    resetConfig();
  };
}
