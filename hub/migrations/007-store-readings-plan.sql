-- hr_store_readings (002) no longer plans its statement anew for every group: planning it cost about as much as
-- storing a group, and more than that for a small group. PostgreSQL now keeps the plan of each connection as it
-- does by default (plan_cache_mode auto: custom plans for the first calls, then the generic plan when it is not
-- dearer). enable_seqscan stays off: whatever the group's size, every table is read by key.
ALTER FUNCTION hr_store_readings(text[], bigint[], smallint[], text[], text[], text[], integer[], integer[], integer[], integer[], boolean[], bigint, boolean)
  RESET plan_cache_mode;
