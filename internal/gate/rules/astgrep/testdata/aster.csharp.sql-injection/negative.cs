using System.Data.SqlClient;
using Microsoft.EntityFrameworkCore;

public class UserRepository
{
    public SqlDataReader Find(SqlConnection conn, string id)
    {
        var cmd = new SqlCommand("SELECT * FROM Users WHERE Id = @id", conn);
        cmd.Parameters.AddWithValue("@id", id);
        return cmd.ExecuteReader();
    }

    public int Delete(AppDbContext db, string name)
    {
        return db.Database.ExecuteSqlInterpolated($"DELETE FROM Users WHERE Name = {name}");
    }
}
