using System.Data.SqlClient;
using Microsoft.EntityFrameworkCore;

public class UserRepository
{
    public SqlDataReader Find(SqlConnection conn, string id)
    {
        // ruleid: aster.csharp.sql-injection
        var cmd = new SqlCommand("SELECT * FROM Users WHERE Id = '" + id + "'", conn);
        return cmd.ExecuteReader();
    }

    public int Delete(AppDbContext db, string name)
    {
        // ruleid: aster.csharp.sql-injection
        return db.Database.ExecuteSqlRaw($"DELETE FROM Users WHERE Name = '{name}'");
    }
}
