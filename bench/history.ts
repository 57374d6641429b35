// History depth: GET /messages must cost the same at any anchor. A dataset of a million
// messages in one channel, every one received by the reader, is built once in the benchmark
// database (kept between runs: it takes a minute or two), then one API replica answers
// windows of 20 messages at the newest end, in the middle and near the oldest, with and
// without a channel narrow. Prints one JSON line with requests/s at each anchor and the
// slowest anchor's ratio to the newest. Not a test: run with `pnpm bench:history`.
import { cpus, loadavg } from 'node:os';
import { getPrisma, runAction, type Realm, type User } from '@parley/db';
import { doCreateOrganization } from '../apps/api/src/actions/realms';
import { throughput } from './http-load';
import { createBenchChannel, prepareBench, stopBench, startBenchStack } from './setup';

const MESSAGES = Number(process.env.BENCH_HISTORY_MESSAGES ?? 1_000_000);
const SUBDOMAIN = `history${MESSAGES}`;

/** The organization with its channel full of messages, built if this database lacks it. */
async function dataset(): Promise<{ realm: Realm; reader: User; first: number; last: number }> {
  const prisma = getPrisma();
  let realm = await prisma.realm.findUnique({ where: { stringId: SUBDOMAIN } });
  if (!realm) {
    const created = await runAction((ctx) =>
      doCreateOrganization(
        ctx,
        {
          name: 'History',
          subdomain: SUBDOMAIN,
          ownerEmail: `owner@${SUBDOMAIN}.test`,
          ownerFullName: 'Reader',
          ownerPassword: null,
        },
        null,
      ),
    );
    realm = created.realm;
    const owner = created.owner;
    const stream = await createBenchChannel(realm, owner, 'history', [owner]);
    console.error(`building ${MESSAGES} messages (once per benchmark database)…`);
    // In slices: one transaction per slice keeps memory and WAL bounded.
    for (let from = 1; from <= MESSAGES; from += 100_000) {
      const to = Math.min(MESSAGES, from + 99_999);
      await prisma.$executeRaw`
        WITH inserted AS (
          INSERT INTO message (realm_id, sender_id, recipient_id, subject, content,
            rendered_content, rendered_content_version, date_sent, sending_client,
            is_channel_message)
          SELECT ${realm.id}, ${owner.id}, ${stream.recipientId}, 'topic ' || (g % 100),
            'message ' || g, '<p>message ' || g || '</p>', 1,
            now() - (${MESSAGES} - g) * interval '1 second', 'bench', true
          FROM generate_series(${from}::int, ${to}::int) g
          RETURNING id)
        INSERT INTO user_message (user_profile_id, message_id, flags)
        SELECT ${owner.id}, id, 1 FROM inserted`;
    }
    await prisma.$executeRaw`ANALYZE message, user_message`;
  }
  const reader = await prisma.user.findFirstOrThrow({ where: { realmId: realm.id } });
  const bounds = await prisma.message.aggregate({
    where: { realmId: realm.id },
    _min: { id: true },
    _max: { id: true },
  });
  return { realm, reader, first: bounds._min.id!, last: bounds._max.id! };
}

async function main(): Promise<void> {
  const services = await prepareBench();
  const { reader, first, last } = await dataset();
  const stack = await startBenchStack(services);
  try {
    const base = `http://127.0.0.1:${stack.api[0]!.port}/api/v1/messages`;
    const auth = {
      Host: `${SUBDOMAIN}.localhost:9991`,
      Authorization: `Basic ${Buffer.from(`${reader.deliveryEmail}:${reader.apiKey}`).toString('base64')}`,
    };
    const channel = encodeURIComponent(
      JSON.stringify([{ operator: 'channel', operand: 'history' }]),
    );
    const window = (anchor: string | number, narrow = '') =>
      throughput(`${base}?anchor=${anchor}&num_before=20&num_after=0${narrow}`, auth);
    const middle = Math.floor((first + last) / 2);
    const figures = {
      newest: await window('newest'),
      middle: await window(middle),
      near_oldest: await window(first + 100),
      channel_newest: await window('newest', `&narrow=${channel}`),
      channel_middle: await window(middle, `&narrow=${channel}`),
      channel_near_oldest: await window(first + 100, `&narrow=${channel}`),
    };
    const rounded = Object.fromEntries(
      Object.entries(figures).map(([name, rps]) => [`${name}_rps`, Math.round(rps)]),
    );
    console.log(
      JSON.stringify({
        cores: cpus().length,
        load: loadavg()[0],
        messages: last - first + 1,
        ...rounded,
        slowest_anchor_ratio_to_newest: Number(
          (Math.min(figures.middle, figures.near_oldest) / figures.newest).toFixed(3),
        ),
        slowest_channel_anchor_ratio_to_newest: Number(
          (
            Math.min(figures.channel_middle, figures.channel_near_oldest) / figures.channel_newest
          ).toFixed(3),
        ),
      }),
    );
  } finally {
    await stopBench(stack, services);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
