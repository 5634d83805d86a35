// `scenario schema` and `scenario report-schema`: the published JSON Schemas of scenario files and
// of the JSON report (committed as scenarios/model/scenario.schema.json and
// scenarios/report/report.schema.json).
import type { CommandModule } from 'yargs';
import { Scenario } from '../model/scenario-file.ts';
import { Report } from '../report/schema.ts';

export const schemaCommand: CommandModule = {
  command: 'schema',
  describe: 'print the JSON Schema of scenario files',
  handler: () => {
    process.stdout.write(`${JSON.stringify(Scenario, null, 2)}\n`);
  },
};

export const reportSchemaCommand: CommandModule = {
  command: 'report-schema',
  describe: 'print the JSON Schema of the JSON report (--report-json)',
  handler: () => {
    process.stdout.write(`${JSON.stringify(Report, null, 2)}\n`);
  },
};
