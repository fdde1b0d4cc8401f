function AllocationsDAO(db) {
    const allocationsCol = db.collection("allocations");

    this.getByUserIdAndThreshold = (userId, threshold, callback) => {
        const parsedUserId = parseInt(userId);
        const searchCriteria = () => {
            if (threshold) {
                return {
                    // ruleid: aster.js.nosql-injection
                    $where: `this.userId == ${parsedUserId} && this.stocks > '${threshold}'`
                };
            }
            return { userId: parsedUserId };
        };
        allocationsCol.find(searchCriteria()).toArray(callback);
    };
}

async function login(req, res, users) {
    // ruleid: aster.js.nosql-injection
    const user = await users.findOne(req.body);
    res.json(user);
}

function byName(col, name) {
    // ruleid: aster.js.nosql-injection
    return col.find({ "$where": "this.name == '" + name + "'" });
}
