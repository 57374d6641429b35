// Data files Zulip serves as static assets that clients fetch by the URL /register gives
// them: the Unicode emoji names at server_emoji_data_url (zulip-flutter's emoji picker,
// autocomplete and status suggestions). Outside /api/v1 and without credentials, as in Zulip.
import { Router } from 'express';
import { emojiApiData } from '@parley/markdown';
import { EMOJI_DATA_PATH } from '../lib/realm-state';

export function staticDataRoutes(): Router {
  const router = Router();
  // Built once: the table changes only with a new build.
  const emojiData = JSON.stringify(emojiApiData());
  router.get(EMOJI_DATA_PATH, (_req, res) => {
    res
      .status(200)
      .type('json')
      // A day: Zulip's generated files are cached long, and the table changes only on upgrade.
      .set('Cache-Control', 'public, max-age=86400')
      .send(emojiData);
  });
  return router;
}
