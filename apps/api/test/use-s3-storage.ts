// Runs whole test files with uploads stored in S3 (a fresh s3rver per file), to check that the
// upload, emoji and thumbnail tests written against local storage hold on S3 too:
//   pnpm exec jest --setupFilesAfterEnv ./test/after-env.ts ./apps/api/test/use-s3-storage.ts \
//     apps/api/test/uploads.test.ts apps/api/test/realm-emoji.test.ts
// Files are served through the API (S3_SERVE_MODE=proxy) unless PARLEY_TEST_S3_SERVE_MODE says
// redirect: those tests expect the bytes in the answer, not a redirect.
import { startS3, useS3Config } from './s3-server';

let stop: (() => Promise<void>) | undefined;

beforeAll(async () => {
  const s3 = await startS3();
  const restore = useS3Config(s3, {
    serveMode: process.env.PARLEY_TEST_S3_SERVE_MODE ?? 'proxy',
  });
  stop = async () => {
    restore();
    await s3.stop();
  };
});

afterAll(async () => {
  await stop?.();
});
