-- SkillsBench leaderboard by task difficulty: one line per agent and difficulty (rows without one are left out).
-- Reads the table `results` (read_json_auto of results/*.json): each file holds shard envelopes,
-- each envelope holds public rows. Counts are of distinct tasks; reward and time are per row.
WITH public_rows AS (
  SELECT CAST(f.participants.agent AS VARCHAR) AS agent_id, flat.r
  FROM results AS f, UNNEST(f.results) AS shard(envelope), UNNEST(shard.envelope.results) AS flat(r)
  WHERE f.status = 'completed'
),
scored AS (
  SELECT
    agent_id,
    r.task_id AS task_id,
    r.difficulty AS difficulty,
    COALESCE(r.score_eligible, false) AS eligible,
    COALESCE(r.score_eligible, false) AND COALESCE(r.passed, false) AS solved,
    r.reward AS reward,
    COALESCE(r.time_used, 0) AS seconds,
    r.infra_failure_type IS NOT NULL OR NOT COALESCE(r.score_eligible, false) AS infra_failed
  FROM public_rows
  WHERE agent_id IS NOT NULL AND agent_id <> '' AND r.task_id IS NOT NULL
    AND r.difficulty IS NOT NULL
),
per_agent AS (
  SELECT
    agent_id,
    difficulty,
    COUNT(DISTINCT task_id) FILTER (WHERE solved) AS solved_tasks,
    COUNT(DISTINCT task_id) FILTER (WHERE eligible) AS eligible_tasks,
    AVG(reward) FILTER (WHERE eligible) AS mean_reward,
    SUM(CASE WHEN eligible THEN seconds ELSE 0 END) AS seconds,
    SUM(CASE WHEN infra_failed THEN 1 ELSE 0 END) AS infra_failed
  FROM scored
  GROUP BY agent_id, difficulty
)
SELECT
  agent_id AS id,
  difficulty AS "Difficulty",
  format('{}/{}', solved_tasks, eligible_tasks) AS "Tasks passed",
  ROUND(100.0 * solved_tasks / eligible_tasks, 1) AS "Pass Rate",
  ROUND(mean_reward, 3) AS "Mean Reward",
  ROUND(seconds, 1) AS "Time",
  eligible_tasks AS "# Tasks",
  infra_failed AS "Infra Failed"
FROM per_agent
WHERE eligible_tasks > 0
ORDER BY "Difficulty", "Pass Rate" DESC NULLS LAST, "Time", id
