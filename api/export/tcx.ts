// TCX export of a session: Garmin Training Center Database v2, one Activity
// (Sport="Other") with one Lap whose Track has a Trackpoint per reading (Time
// and HeartRateBpm). Element order follows the TrainingCenterDatabasev2.xsd
// (ActivityLap_t: TotalTimeSeconds, DistanceMeters, Calories, Average/Maximum
// HeartRateBpm, Intensity, TriggerMethod, Track).
import type { SessionReading, SessionSummary } from '../sessions.ts'

const iso = (ms: number): string => new Date(ms).toISOString()
const bpm = (v: number): number => Math.min(255, Math.max(1, Math.round(v)))

export function sessionTcx (summary: SessionSummary, readings: readonly SessionReading[]): string {
  const points = readings.map(r => `          <Trackpoint><Time>${iso(r.measured_at)}</Time><HeartRateBpm><Value>${bpm(r.heart_rate)}</Value></HeartRateBpm></Trackpoint>`)
  return `<?xml version="1.0" encoding="UTF-8"?>
<TrainingCenterDatabase xmlns="http://www.garmin.com/xmlschemas/TrainingCenterDatabase/v2" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="http://www.garmin.com/xmlschemas/TrainingCenterDatabase/v2 http://www.garmin.com/xmlschemas/TrainingCenterDatabasev2.xsd">
  <Activities>
    <Activity Sport="Other">
      <Id>${iso(summary.start)}</Id>
      <Lap StartTime="${iso(summary.start)}">
        <TotalTimeSeconds>${(summary.end - summary.start) / 1000}</TotalTimeSeconds>
        <DistanceMeters>0</DistanceMeters>
        <Calories>${Math.min(65535, Math.round(summary.kcal))}</Calories>
        <AverageHeartRateBpm><Value>${bpm(summary.avg)}</Value></AverageHeartRateBpm>
        <MaximumHeartRateBpm><Value>${bpm(summary.max)}</Value></MaximumHeartRateBpm>
        <Intensity>Active</Intensity>
        <TriggerMethod>Manual</TriggerMethod>
        <Track>
${points.join('\n')}
        </Track>
      </Lap>
      <Creator xsi:type="Device_t"><Name>hr-relay</Name><UnitId>0</UnitId><ProductID>0</ProductID><Version><VersionMajor>0</VersionMajor><VersionMinor>1</VersionMinor></Version></Creator>
    </Activity>
  </Activities>
</TrainingCenterDatabase>
`
}
