class UsersController < ApplicationController
  def search
    # ruleid: aster.ruby.sql-injection
    @users = User.where("name = '#{params[:name]}'")
  end

  def purge(conn, name)
    # ruleid: aster.ruby.sql-injection
    conn.execute("DELETE FROM users WHERE name = '" + name + "'")
  end
end
