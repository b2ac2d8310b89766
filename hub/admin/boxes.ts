// `hr-relay hub admin box …`: the boxes of the chain. A box registered here receives the chain's members and
// pairings (hub/membership/publisher.ts); the box itself names its id in its configuration (`chain.box_id`).
import { chainBoxPrefix, membersTopic } from '../../firmware-protocol/upstream.ts'
import { defineCommand, refused, usageError, type HubAdminCommand } from './command.ts'

/** A box id as it may appear in a topic: the one rule of firmware-protocol/upstream.ts and 004-chain.sql. */
const BOX_ID = /^[A-Za-z0-9._:-]{1,64}$/

interface BoxView { box_id: string, created_at: number, upstream_prefix: string, members_topic: string }

export const BOX_COMMANDS: HubAdminCommand[] = [
  defineCommand({
    words: ['box', 'add'],
    usage: 'box add <box_id>',
    args: ['box_id'],
    run: async (ctx, [boxId]): Promise<BoxView> => {
      const id = boxId as string
      if (!BOX_ID.test(id)) throw usageError('<box_id> must be 1 to 64 of A-Z a-z 0-9 . _ : -')
      const now = Date.now()
      // The insert's trigger (004-chain.sql) tells running instances to publish to the new box at commit.
      const inserted = await (await ctx.stores()).pool.query('INSERT INTO boxes (box_id, created_at) VALUES ($1, $2) ON CONFLICT (box_id) DO NOTHING', [id, now])
      if (inserted.rowCount === 0) throw refused(`box ${id} already exists`)
      const root = ctx.config.mqtt.topic_root
      return { box_id: id, created_at: now, upstream_prefix: chainBoxPrefix(root, id), members_topic: membersTopic(root, id) }
    },
    human: r => `box ${r.box_id} added: it publishes under ${r.upstream_prefix} and receives the chain's members at ${r.members_topic}\n(its configuration: "chain": { "box_id": "${r.box_id}" })`
  }),
  defineCommand({
    words: ['box', 'list'],
    usage: 'box list',
    args: [],
    run: async ctx => {
      const root = ctx.config.mqtt.topic_root
      const rows = (await (await ctx.stores()).pool.query<{ box_id: string, created_at: string }>('SELECT box_id, created_at FROM boxes ORDER BY created_at, box_id')).rows
      return { boxes: rows.map((r): BoxView => ({ box_id: r.box_id, created_at: Number(r.created_at), upstream_prefix: chainBoxPrefix(root, r.box_id), members_topic: membersTopic(root, r.box_id) })) }
    },
    human: r => r.boxes.map(b => `${b.box_id}\t${new Date(b.created_at).toISOString()}\t${b.members_topic}`).join('\n') || '(no boxes)'
  })
]
