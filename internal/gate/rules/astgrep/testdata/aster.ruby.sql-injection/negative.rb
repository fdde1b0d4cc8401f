class UsersController < ApplicationController
  def search
    @users = User.where("name = ?", params[:name])
    @admins = User.where(role: "admin")
  end

  def recent(conn)
    conn.execute("DELETE FROM sessions WHERE expired = 1")
  end
end
