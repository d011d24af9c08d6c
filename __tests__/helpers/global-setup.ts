import { writeLuaModule } from '../../scripts/lua-module';

/** Every Jest run, `npx jest <file>` included, tests the scripts as they are in lua/ now. */
export default function globalSetup(): void {
  writeLuaModule();
}
