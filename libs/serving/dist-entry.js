// Entry of @abacus/serving for Node at run time: the compiled sources live in the repository's dist/.
module.exports = require('../../dist/libs/serving/src/index.js');
