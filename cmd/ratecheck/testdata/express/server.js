// An API limited per API key with a quota per tier, by express-rate-limit
// (TestVerifyContractTiersAgainstExpressRateLimit): GET /v1/search, its
// limiter keyed on the X-Api-Key header (keyGenerator), its limit a
// function of the key's tier (PAID_KEYS: paid, PAID_LIMIT a window; any
// other key: FREE_LIMIT), over WINDOW_MS, refused with a 429 and the
// contract's body. It listens on LISTEN (host:port).
const express = require('express');
const { rateLimit } = require('express-rate-limit');

const paid = new Set((process.env.PAID_KEYS || '').split(',').filter(Boolean));
const app = express();
app.use('/v1/search', rateLimit({
  windowMs: Number(process.env.WINDOW_MS),
  limit: (req) => (paid.has(req.get('x-api-key')) ? Number(process.env.PAID_LIMIT) : Number(process.env.FREE_LIMIT)),
  keyGenerator: (req) => req.get('x-api-key') || '',
  standardHeaders: false,
  legacyHeaders: false,
  statusCode: 429,
  message: { error: { code: 'rate_limited' } },
  validate: false,
}));
app.get('/v1/search', (req, res) => res.json({ ok: true }));
const [host, port] = process.env.LISTEN.split(':');
app.listen(Number(port), host);
