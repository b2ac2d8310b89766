// GET /api/v1/classes and GET /api/v1/classes/{class_id}/export (hr-relay
// extensions, docs/api.md "Class summaries"): the member's class summaries and
// one class as CSV, TCX or FIT, and the JSON Schemas of the class shapes
// (api/classes/types.ts) that the admin API answers with too.
import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { guard, type GuardUses } from './data-auth.ts'
import type { Services } from '../services.ts'
import { profileOf } from './auth.ts'
import { rangeOf } from './history.ts'
import { Params } from './schema.ts'
import { sendClassExport, type ClassExportUses } from '../export/class-export.ts'

const ms = (description: string): { type: 'number', description: string } => ({ type: 'number', description })
const nullableMs = (description: string): { type: readonly ['number', 'null'], description: string } => ({ type: ['number', 'null'], description } as const)
const fiveZones = (description: string): object => ({ type: 'array', items: { type: 'number' }, minItems: 5, maxItems: 5, description })

/** ClassRecord: one class of a room (POST /admin/rooms/{id}/class, the CLI's --json). */
export const CLASS_RECORD_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['class_id', 'room_id', 'name', 'started_at', 'planned_end', 'ended_at', 'hidden'],
  properties: {
    class_id: { type: 'string' },
    room_id: { type: 'string' },
    name: { type: 'string' },
    started_at: ms('when the class started (Unix ms)'),
    planned_end: ms('when the class ends by itself (Unix ms): started_at + its minutes'),
    ended_at: nullableMs('when it ended (Unix ms); null while it runs'),
    hidden: { type: 'array', items: { type: 'string' }, description: 'profile ids the coach hid from the display for this class' }
  }
} as const

/** ClassView: the running class or its results (GET /admin/rooms/{id}/class, the display's room_class message). */
export const CLASS_VIEW_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['class_id', 'room_id', 'name', 'started_at', 'planned_end', 'ended_at', 'state', 'results_until', 'members'],
  properties: {
    class_id: { type: 'string' },
    room_id: { type: 'string' },
    name: { type: 'string' },
    started_at: ms('Unix ms'),
    planned_end: ms('Unix ms'),
    ended_at: nullableMs('Unix ms; null while it runs'),
    state: { type: 'string', enum: ['running', 'results'] },
    results_until: nullableMs('until when displays show the results (Unix ms); null while it runs'),
    members: {
      type: 'array',
      description: 'ranked by effort points, most first; ties by display name',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['profile_id', 'display_name', 'effort_points', 'zone_minutes', 'max_heart_rate', 'alert', 'hidden'],
        properties: {
          profile_id: { type: 'string' },
          display_name: { type: 'string' },
          effort_points: { type: 'number', description: 'effort points of the completed minutes so far' },
          zone_minutes: fiveZones('completed minutes whose average fell in zones 1..5'),
          max_heart_rate: { type: 'number', description: 'the maximum the zones are computed against (bpm)' },
          alert: { type: 'boolean', description: 'at or above 95 % of max_heart_rate for the last 60 s' },
          hidden: { type: 'boolean', description: 'hidden from the display by the coach for this class' }
        }
      }
    }
  }
} as const

/** ClassSummary: a member's summary of one class. */
export const CLASS_SUMMARY_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['class_id', 'room_id', 'name', 'started_at', 'ended_at', 'duration_s', 'avg_bpm', 'max_bpm', 'zones_s', 'calories_kcal', 'effort_points', 'rank', 'ranked', 'max_heart_rate'],
  properties: {
    class_id: { type: 'string' },
    room_id: { type: 'string' },
    name: { type: 'string', description: 'the class name' },
    started_at: ms('when the class started (Unix ms)'),
    ended_at: ms('when the class ended (Unix ms)'),
    duration_s: { type: 'number', description: 'length of the class (seconds)' },
    avg_bpm: { type: ['number', 'null'], description: 'mean of the member\'s readings in the class (bpm, 0.1)' },
    max_bpm: { type: ['number', 'null'], description: 'highest reading in the class (bpm)' },
    zones_s: fiveZones('seconds in zones 1..5, as sessions count them'),
    calories_kcal: { type: 'number', description: 'calories (kcal, 0.1), as sessions count them' },
    effort_points: { type: 'number', description: 'effort points: per completed minute 0 below zone 1, 1..3 in zones 1..3, 4 in zones 4 and 5' },
    rank: { type: 'number', description: 'rank by effort points in the class; 1 is the most, ties share a rank' },
    ranked: { type: 'number', description: 'how many members were ranked' },
    max_heart_rate: { type: 'number', description: 'the maximum heart rate the zones were computed against (bpm)' }
  }
} as const

/** What the class list and exports read: the members' stored summaries, their readings and settings. */
export type ClassesUses = GuardUses & ClassExportUses & Pick<Services, 'classStore'>

export const classesPlugin: FastifyPluginAsyncTypebox<ClassesUses> = async (app, uses) => {
  app.get('/api/v1/classes', {
    onRequest: guard(uses, { scope: 'data:heart_rate:read' }),
    schema: {
      querystring: Type.Object({ from: Type.Optional(Type.String()), to: Type.Optional(Type.String()) }),
      response: { 200: { type: 'object', additionalProperties: false, required: ['classes'], properties: { classes: { type: 'array', items: CLASS_SUMMARY_SCHEMA, description: 'the member\'s classes that started in [from, to), oldest first' } } } }
    }
  }, async request => {
    const { from, to } = rangeOf(request.query)
    return { classes: await uses.classStore.summariesOf(profileOf(request), from, to) }
  })

  app.get('/api/v1/classes/:class_id/export', {
    onRequest: guard(uses, { scope: 'data:heart_rate:read' }),
    schema: { params: Params({ class_id: Type.String({ maxLength: 100 }) }), querystring: Type.Object({ format: Type.Optional(Type.String()) }) }
  }, async (request, reply) => {
    return await sendClassExport(uses, reply, profileOf(request), request.params.class_id, request.query.format)
  })
}
