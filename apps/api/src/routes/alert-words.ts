// GET, POST and DELETE /users/me/alert_words.
import { Router } from 'express';
import { z } from 'zod';
import { userEndpoint } from '@parley/auth';
import { runAction } from '@parley/db';
import { defineRoute, p } from '@parley/http';
import { doAddAlertWords, doRemoveAlertWords } from '../actions/alert-words';
import { alertWordsOf } from '../lib/alert-words';

export const alertWordRoutes = Router();

/** Zulip's limit per word; the list bound keeps one request's work small. */
const MAX_ALERT_WORD_LENGTH = 100;
const MAX_WORDS_PER_REQUEST = 1000;

/** Every answer is the user's whole list after the change. */
const alertWords = z.object({ alert_words: z.array(z.string()) });

defineRoute(alertWordRoutes, '/users/me/alert_words', {
  GET: userEndpoint({ response: alertWords }, async ({ user }) => ({
    alert_words: await alertWordsOf(user.id),
  })),
  POST: userEndpoint(
    {
      params: {
        alert_words: p.json(
          z.array(z.string().max(MAX_ALERT_WORD_LENGTH)).max(MAX_WORDS_PER_REQUEST),
        ),
      },
      response: alertWords,
    },
    async ({ user, params }) => ({
      alert_words: await runAction((ctx) => doAddAlertWords(ctx, user, params.alert_words)),
    }),
  ),
  DELETE: userEndpoint(
    {
      params: {
        alert_words: p.json(z.array(z.string().max(1000)).max(MAX_WORDS_PER_REQUEST)),
      },
      response: alertWords,
    },
    async ({ user, params }) => ({
      alert_words: await runAction((ctx) => doRemoveAlertWords(ctx, user, params.alert_words)),
    }),
  ),
});
