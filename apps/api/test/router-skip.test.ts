// The API's routers are passed over by paths they cannot serve (onlyForItsPaths): a router that
// gains middleware, or a route whose first segment is not literal, is entered by every request
// again, which is correct but slower. This names the routers that are, so such a change is a
// decision.
import { firstSegments } from '@parley/http';
import { apiRouters } from '../src/app';
import { messageRoutes } from '../src/routes/messages';
import { tusRoutes } from '../src/routes/tus';

describe('the API routers a request can pass over', () => {
  it('are all but the resumable uploads, which mount middleware of their own', () => {
    const { uploads, resources } = apiRouters();
    const enteredByAll = [...uploads, ...resources].filter(
      (router) => firstSegments(router) === null,
    );
    expect(enteredByAll).toEqual([tusRoutes]);
    expect(firstSegments(messageRoutes)).toContain('messages');
  });
});
