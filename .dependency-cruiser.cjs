// The dependency rule (README "Architecture"), checked by `npm run depcheck`
// and by test/architecture.test.ts (so `npm test` fails on a violation):
//   firmware-protocol ← api ← relay, and device-sim uses only firmware-protocol;
//   bin/ is the one entry point that puts the product and the simulator side by side.

/**
 * api's public surface: the modules relay may import. Everything else in api
 * (OAuth internals, the readings store, web pages, routes) is api's own.
 */
const API_PUBLIC = [
  'api/services.ts', // the services bag, HealthEntry, the metrics port
  'api/pipeline/reading.ts', // the reading value and the Ingest port every source hands it to
  'api/data-services.ts', // readings, pipeline, live hub, rooms: built by the composition root
  'api/hub.ts', // the live hub outputs subscribe to
  'api/auth-port.ts', // AppAuth for the broker; the admin token
  'api/http/server.ts', // the HTTP server
  'api/http/features.ts', // its feature plugins
  'api/http/admin-integrations.ts', // the integrations admin plugin
  'api/store/db.ts', // opening the store, its errors, sublevels (the upstream queue)
  'api/store/users.ts', // the stores the composition root builds and hands out
  'api/store/clients.ts',
  'api/store/tokens.ts',
  'api/store/devices.ts',
  'api/store/integrations.ts',
  'api/privacy/erase.ts' // a member's erasure: the store rewrite after an upstream erasure notice
]
const escape = s => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'No module depends on itself through others (type-only imports count too).',
      from: {},
      to: { circular: true }
    },
    {
      name: 'firmware-protocol-depends-on-nothing',
      severity: 'error',
      comment: 'firmware-protocol holds pure codecs and the reading contract: nothing else of ours.',
      from: { path: '^firmware-protocol/' },
      to: { path: '^(api|hub|relay|device-sim|bin|test|bench|scripts)/' }
    },
    {
      name: 'api-depends-only-on-firmware-protocol',
      severity: 'error',
      comment: 'api knows the reading contract, HTTP, OAuth, the store, the pipeline and the hub; not radios, the broker or the simulator.',
      from: { path: '^api/' },
      to: { path: '^(hub|relay|device-sim|bin|test|bench|scripts)/' }
    },
    {
      name: 'hub-not-the-box',
      severity: 'error',
      comment: "hub (a chain's hub) builds on api and firmware-protocol; not the box's radios and broker (relay) or the simulator.",
      from: { path: '^hub/' },
      to: { path: '^(relay|device-sim|bin|test|bench|scripts)/' }
    },
    {
      name: 'device-sim-depends-only-on-firmware-protocol',
      severity: 'error',
      comment: "device-sim talks to the product only through device transports and the admin API's wire format.",
      from: { path: '^device-sim/' },
      to: { path: '^(api|hub|relay|bin|test|bench|scripts)/' }
    },
    {
      name: 'relay-not-device-sim',
      severity: 'error',
      comment: 'The simulator is wired in beside the product by bin/cli.ts, never by relay.',
      from: { path: '^relay/' },
      to: { path: '^(hub|device-sim|bin|test|bench|scripts)/' }
    },
    {
      name: 'relay-uses-api-public-surface',
      severity: 'error',
      comment: "relay imports api only through its public modules (API_PUBLIC in .dependency-cruiser.cjs), never api's internals.",
      from: { path: '^relay/' },
      to: { path: '^api/', pathNot: `^(${API_PUBLIC.map(escape).join('|')})$` }
    },
    {
      name: 'oauth-through-the-port',
      severity: 'error',
      comment: 'Only the composition root builds the token store; the rest of relay asks api/auth-port.ts.',
      from: { path: '^relay/', pathNot: '^relay/main\\.ts$' },
      to: { path: '^api/store/tokens\\.ts$' }
    },
    {
      name: 'nothing-imports-tests-or-benches',
      severity: 'error',
      comment: 'test/ and bench/ use the product; the product never uses them.',
      from: { pathNot: '^(test|bench)/' },
      to: { path: '^(test|bench)/' }
    }
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // Type-only imports are dependencies too (a type cycle is still a cycle).
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '^(node_modules|dist|\\.tap)/' }
  }
}
