#!/usr/bin/env node
// The hr-relay command under its first name (units and scripts written before
// bin/hr-relay.cjs): runs bin/hr-relay.cjs, which is the command. Through this
// file a start also sets up Node's ES module loader; name bin/hr-relay.cjs instead.
import './hr-relay.cjs'
