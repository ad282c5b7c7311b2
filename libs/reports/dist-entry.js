// Entry of @abacus/reports for Node at run time: the compiled sources live in the repository's dist/.
module.exports = require('../../dist/libs/reports/src/index.js');
