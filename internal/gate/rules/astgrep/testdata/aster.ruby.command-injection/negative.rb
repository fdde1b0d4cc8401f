require "shellwords"

class ToolsController < ApplicationController
  def ping
    system("ping", "-c", "1", params[:host])
  end

  def listing(dir)
    `ls -l #{Shellwords.escape(dir)}`
  end

  def uptime
    `uptime`
  end
end
